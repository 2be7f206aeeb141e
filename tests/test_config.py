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


@pytest.mark.parametrize("command", ["run", "check", "index"])
@pytest.mark.parametrize("key, toml", [
    ("capture.folder", '[capture]\nfolder = "in\\u0000box"\n'),
    ("vault", 'vault = "{vault}\\u0000x"\n'),
    ("vaults[1]", 'vaults = ["{vault}", "{vault}2\\u0000"]\n'),
    ("state_dir", 'state_dir = "/tmp/st\\u0000ate"\n'),
    ("socket", 'socket = "/tmp/so\\u0000ck"\n'),
    ("watch.ignore_dirs", '[watch]\nignore_dirs = [".git", "a\\u0000b"]\n'),
    ("tiers.cold", '[tiers]\ncold = ["arch\\u0000ive/**"]\n'),
])
def test_a_nul_in_a_configured_path_is_a_configuration_error_naming_the_key(command, key, toml, vault, tmp_path):
    """A NUL no path can hold: `vaultd run` stopped with a ValueError traceback (embedded null
    byte) where the capture folder held one. Each path-valued key is checked before any path
    is looked at: exit 2, the file and the key named, no traceback, nothing made."""
    cfg = tmp_path / "nul.toml"
    cfg.write_text(toml.replace("{vault}", str(vault)))
    state = tmp_path / "state"
    r = subprocess.run([sys.executable, "-m", "vaultd", command, "--config", str(cfg)]
                       + ([] if key.startswith("vault") else ["--vault", str(vault)]),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"vaultd: configuration error: {cfg}: {key}: "), r.stderr
    assert "holds a NUL character" in r.stderr and "Traceback" not in r.stderr
    assert not state.exists()


def test_a_nul_in_a_path_given_to_the_library_is_a_config_error(vault):
    with pytest.raises(ConfigError, match=r"capture.folder: 'in\\x00box' holds a NUL"):
        Config(vault=str(vault), capture=msgspec.convert({"folder": "in\0box"}, type=type(Config().capture))).load()


@pytest.mark.parametrize("toml, message", [
    ('[split]\nhost = "two words"\n', "split.host: expected a host name as `hostname` prints it, got 'two words'"),
    ('[split]\nhost = "a"\n[capture]\nhost = "b"\n', "split.host (a) and capture.host (b) name different machines"),
    ('[search]\nconflict_copies = "merge"\n', "search.conflict_copies: expected collapse, below or hide, got 'merge'"),
])
def test_bad_host_or_conflict_mode_exits_2(toml, message, vault, tmp_path):
    cfg = tmp_path / "bad.toml"
    cfg.write_text(toml)
    r = subprocess.run([sys.executable, "-m", "vaultd", "index", "--config", str(cfg), "--vault", str(vault)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith(f"vaultd: configuration error: {cfg}: {message}"), r.stderr


def test_the_writing_host(monkeypatch, vault):
    """`host` names the one machine that writes (split.host or capture.host, the same rule);
    VAULTD_HOSTNAME stands for this machine's name where set (_default_hostname)."""
    from vaultd.config import same_host

    monkeypatch.setenv("VAULTD_HOSTNAME", "desktop")
    assert Config(vault=str(vault)).load().writes_elsewhere() is None  # empty: any host
    cfg = Config.from_file(None)
    for section in ("split", "capture"):
        c = msgspec.structs.replace(cfg, **{section: msgspec.structs.replace(getattr(cfg, section), host="laptop")})
        assert c.writes_elsewhere() == "this vault writes only on host laptop; this is desktop"
        monkeypatch.setenv("VAULTD_HOSTNAME", "Laptop.lan")
        assert c.writes_elsewhere() is None
        monkeypatch.setenv("VAULTD_HOSTNAME", "desktop")
    assert same_host("laptop", "LAPTOP") and same_host("laptop.lan", "laptop") and not same_host("laptop.a", "laptop.b")
    assert not same_host("laptop", "laptop2")
