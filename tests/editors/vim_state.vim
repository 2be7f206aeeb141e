" Sourced by the steps of tests/test_vim.py's rename test: VaultdTestState(what) appends one
" JSON line to $VAULTD_STATE: the vault's files ($VAULT, but hidden ones: vaultd's journal,
" swap files) with their text, each loaded buffer of the vault (its file, whether it is
" modified, whether it says what its file says, its swap file), the file of each window
" and of the current one.

function! s:rel(path) abort
  return strpart(fnamemodify(a:path, ':p'), len($VAULT) + 1)
endfunction

function! s:tree() abort
  let tree = {}
  for f in globpath($VAULT, '**', 0, 1)
    if filereadable(f) && !isdirectory(f)
      let tree[s:rel(f)] = join(readfile(f, 'b'), "\n")
    endif
  endfor
  return tree
endfunction

function! VaultdTestState(what) abort
  let buffers = []
  for b in getbufinfo({'bufloaded': 1})
    if !empty(b.name) && stridx(fnamemodify(b.name, ':p'), $VAULT . '/') == 0
      call add(buffers, {'file': s:rel(b.name), 'modified': b.changed,
            \ 'same': filereadable(b.name) && getbufline(b.bufnr, 1, '$') ==# readfile(b.name),
            \ 'swap': swapname(b.bufnr)})
    endif
  endfor
  let row = {'what': a:what, 'current': s:rel(expand('%:p')), 'tree': s:tree(), 'buffers': buffers,
        \ 'windows': map(range(1, winnr('$')), 's:rel(bufname(winbufnr(v:val)))')}
  call writefile([json_encode(row)], $VAULTD_STATE, 'a')
endfunction
