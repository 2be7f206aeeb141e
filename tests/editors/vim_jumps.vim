" Driven by tests/test_vim.py in Vim (-es) and Neovim (--headless): loads editors/vim from
" $VAULTD_VIM, runs $VAULTD_STEPS (one Ex command a line, or `visit qf|loc`: go to every
" item of the quickfix or location list and record where the cursor lands) in $VAULT, and
" writes one line per landing to $VAULTD_OUT: file TAB line TAB byte column TAB the text
" from the cursor on. Errors are written as `ERROR ...`.
set nocompatible noswapfile nomore shortmess+=A
let &runtimepath = $VAULTD_VIM . ',' . &runtimepath
filetype on
runtime plugin/vaultd.vim
let s:out = []

function! s:land() abort
  call add(s:out, join([expand('%:p'), line('.'), col('.'), strpart(getline('.'), col('.') - 1)], "\t"))
endfunction

function! s:visit(kind) abort
  let n = a:kind ==# 'qf' ? len(getqflist()) : len(getloclist(0))
  call add(s:out, 'ITEMS ' . n)
  for i in range(1, n)
    execute (a:kind ==# 'qf' ? 'cc ' : 'll ') . i
    call s:land()
  endfor
endfunction

try
  execute 'cd' fnameescape($VAULT)
  for step in readfile($VAULTD_STEPS)
    if step =~# '^visit '
      call s:visit(step[6:])
    elseif step ==# 'land'
      call s:land()
    else
      execute step
    endif
  endfor
catch
  call add(s:out, 'ERROR ' . v:exception . ' at ' . v:throwpoint)
endtry
call writefile(s:out, $VAULTD_OUT)
qall!
