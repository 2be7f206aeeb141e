import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from vaultd.config import Config
from vaultd.errors import ConfigError

EXAMPLE = Path(__file__).parent.parent / "config.example.toml"


def test_example_config_decodes_to_the_defaults():
    assert Config.from_file(EXAMPLE) == Config()


def test_example_config_lists_every_key():
    text = EXAMPLE.read_text()

    def keys(struct, prefix=""):
        for name in struct.__struct_fields__:
            val = getattr(struct, name)
            if isinstance(val, msgspec.Struct):
                yield from keys(val, f"{name}.")
            else:
                yield prefix, name

    for section, key in keys(Config()):
        assert f"\n{key} = " in text, f"{section}{key} missing from config.example.toml"


def test_load_derives_paths(vault, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    cfg = Config(vault=str(vault)).load()
    assert cfg.vault == str(vault.resolve())
    assert Path(cfg.state_dir).parent == tmp_path / "state" / "vaultd"
    assert Path(cfg.socket).parent == tmp_path / "run" / "vaultd"
    assert Path(cfg.socket).name.startswith("vault-") and cfg.socket.endswith(".sock")


def test_two_vaults_with_the_same_folder_name_get_distinct_state(tmp_path):
    a, b = tmp_path / "a" / "notes", tmp_path / "b" / "notes"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    ca, cb = Config(vault=str(a)).load(), Config(vault=str(b)).load()
    assert ca.state_dir != cb.state_dir and ca.socket != cb.socket


def test_socket_falls_back_to_a_private_folder_without_xdg_runtime_dir(vault, monkeypatch, short_dir):
    from vaultd import paths

    # short_dir, not tmp_path: the socket goes under it, and tmp_path can pass the 107-byte limit
    monkeypatch.setattr(paths, "SESSION_RUNTIME", str(short_dir / "no-login" / "{uid}"))
    cfg = Config(vault=str(vault)).load()
    assert Path(cfg.socket).parent.name.startswith("vaultd-")
    session = short_dir / "run-user" / str(os.getuid())  # a login's runtime folder, the variable unset
    session.mkdir(parents=True)
    monkeypatch.setattr(paths, "SESSION_RUNTIME", str(short_dir / "run-user" / "{uid}"))
    assert Path(Config(vault=str(vault)).load().socket).parent == session / "vaultd"


def test_state_dir_inside_the_vault_is_refused(vault):
    with pytest.raises(ConfigError, match="inside the vault"):
        Config(vault=str(vault), state_dir=str(vault / ".vaultd")).load()


def test_socket_path_too_long_is_a_clear_error(vault):
    with pytest.raises(ConfigError, match="at most 107"):
        Config(vault=str(vault), socket="/tmp/" + "x" * 120 + ".sock").load()


def test_missing_vault_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="is not a folder"):
        Config(vault=str(tmp_path / "nope")).load()
    with pytest.raises(ConfigError, match="no vault given"):
        Config().load()


@pytest.mark.parametrize(
    "toml, message",
    [
        ("colour = 1\n", "unknown field `colour`"),
        ("[watch]\ndebounce_ms = 'fast'\n", "watch.debounce_ms: expected `int`, got `str`"),
        ("[search]\nlimit = 0\n", "search.limit: expected an integer >= 1, got 0"),
        ("log_level = 'loud'\n", "log_level: expected one of debug, info, warning, error"),
        ("[index\n", "not valid TOML"),
    ],
)
def test_bad_config_exits_2_naming_file_key_and_expectation(toml, message, vault, tmp_path):
    cfg = tmp_path / "bad.toml"
    cfg.write_text(toml)
    r = subprocess.run(
        [sys.executable, "-m", "vaultd", "index", "--config", str(cfg), "--vault", str(vault)],
        capture_output=True, text=True, timeout=60,
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"vaultd: configuration error: {cfg}: ")
    assert message in r.stderr


def test_env_overrides(vault, monkeypatch, tmp_path):
    monkeypatch.setenv("VAULTD_VAULT", str(vault))
    monkeypatch.setenv("VAULTD_SOCKET", str(tmp_path / "x.sock"))
    cfg = Config().load()
    assert cfg.vault == str(vault.resolve()) and cfg.socket == str(tmp_path / "x.sock")


def test_split_mode_flag_over_environment_over_file(tmp_path, monkeypatch):
    (tmp_path / "v").mkdir()
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'vault = "{tmp_path / "v"}"\n[split]\nmode = "auto"\n')
    base = Config.from_file(cfg)
    assert base.with_overrides().load().split.mode == "auto"
    monkeypatch.setenv("VAULTD_SPLIT", "off")
    assert base.with_overrides().load().split.mode == "off"
    assert base.with_overrides(split="propose").load().split.mode == "propose"
    monkeypatch.setenv("VAULTD_SPLIT", "sometimes")
    with pytest.raises(ConfigError, match="VAULTD_SPLIT"):
        base.with_overrides().load()
    out = subprocess.run([sys.executable, "-m", "vaultd", "check", "--vault", str(tmp_path / "v"), "--split", "propose"],
                         capture_output=True, text=True)
    assert "split:     propose: vaultd never writes into the vault on its own" in out.stdout


def test_vaultd_check_from_inside_a_vault_it_knows_checks_that_vault(tmp_path):
    """vaultq finds the vault around the current folder; `vaultd check` said "no vault given"
    there. From inside a vault vaultd has indexed, it checks that vault."""
    import os
    import subprocess
    import sys

    v = tmp_path / "v"
    (v / "notes").mkdir(parents=True)
    (v / "notes" / "a.md").write_text("# A\n")
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "no-config")}
    subprocess.run([sys.executable, "-m", "vaultd", "index", "--vault", str(v)], capture_output=True, env=env,
                   check=True, timeout=60)
    out = subprocess.run([sys.executable, "-m", "vaultd", "check"], capture_output=True, text=True,
                         cwd=v / "notes", env=env, timeout=60)
    assert "no vault given" not in out.stderr and f"vault:     {v}" in out.stdout, (out.stdout, out.stderr)
    elsewhere = subprocess.run([sys.executable, "-m", "vaultd", "check"], capture_output=True, text=True,
                               cwd=tmp_path, env=env, timeout=60)
    assert elsewhere.returncode != 0 and "no vault given" in elsewhere.stderr
