" vaultd.vim: a notes vault indexed by vaultd, from Vim 9 and Neovim (plain Vimscript).
" Everything goes through `vaultq` (stdlib Python, no daemon of its own): see autoload/vaultd.vim.
" Maintainer: the vaultd project. License: as vaultd.

if exists('g:loaded_vaultd')
  finish
endif
let g:loaded_vaultd = 1

" The vaultq to run (a full path when it is not on $PATH), and extra arguments before its
" command (e.g. ['--vault', '~/notes'] when several daemons run).
let g:vaultd_vaultq = get(g:, 'vaultd_vaultq', 'vaultq')
let g:vaultd_args = get(g:, 'vaultd_args', [])

" :VaultSearch WORDS    notes ranked for WORDS, their best lines, into the quickfix list
" :VaultGrep WORDS      every line holding WORDS (as rg -i), into the quickfix list
" :VaultBacklinks [N]   links into note N (default: this file), into the location list
" :VaultLinks [N]       links out of note N (default: this file), into the location list
" :VaultContext WORDS   the sections `vaultq context` would give an agent, into the quickfix list
" :VaultBroken          every broken link of the vault, into the quickfix list
" :VaultRename TITLE    rename the note the link under the cursor leads to (else this one) to
"                       TITLE, every link to it rewritten; :VaultRename! the heading on this line
" :VaultHistory         every write vaultd made (splits, renames), newest first, into the quickfix list
" :VaultUndo [OP]       undo OP (default: the newest write still done), byte for byte
" Rename and undo write the vault's modified buffers first (g:vaultd_save_before_write = 0:
" refuse instead) and read again the buffers of the files they wrote.
command! -nargs=+ VaultSearch call vaultd#search(<q-args>)
command! -nargs=+ VaultGrep call vaultd#grep(<q-args>)
command! -nargs=? -complete=file VaultBacklinks call vaultd#backlinks(<q-args>)
command! -nargs=? -complete=file VaultLinks call vaultd#links(<q-args>)
command! -nargs=+ VaultContext call vaultd#context(<q-args>)
command! -nargs=0 VaultBroken call vaultd#broken()
command! -nargs=+ -bang VaultRename call vaultd#rename(<q-args>, <bang>0)
command! -nargs=0 VaultHistory call vaultd#history()
command! -nargs=? -complete=customlist,vaultd#undo_complete VaultUndo call vaultd#undo(<q-args>)

" In a Markdown or Org buffer of the vault: gf follows the link under the cursor (else it
" is Vim's own gf), and :grep runs vaultq grep (grepprg and grepformat set for the buffer).
augroup vaultd
  autocmd!
  autocmd BufReadPost,BufNewFile *.md,*.markdown,*.org call vaultd#setup_buffer()
augroup END
