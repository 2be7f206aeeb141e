" vaultd.vim: the work behind plugin/vaultd.vim. Each command runs vaultq and reads its
" `--format vimgrep --null` rows: path NUL line:col:text, the column a 1-based BYTE column
" (as rg --vimgrep), which is what Vim's quickfix `col` is; the paths are relative to Vim's
" current folder inside the vault, absolute outside it. The NUL ends the path, so any file
" name is read right (`a:1:2:b.md` too, which `%f:%l:%c:%m` would cut at its first `:1:2:`).

let s:row = '^\(\d\+\):\(\d\+\):\(.*\)$'
let s:vault = ''

" vaultq's command line: the program, g:vaultd_args, then `args`, each shell-quoted.
function! s:command(args) abort
  return join(map([g:vaultd_vaultq] + g:vaultd_args + a:args, 'shellescape(v:val)'))
endfunction

" [output lines, exit code] of vaultq with `args` (stderr too, for its messages).
function! s:run(args) abort
  let out = systemlist(s:command(a:args))
  return [out, v:shell_error]
endfunction

" vimgrep --null rows as quickfix items (systemlist() gives each NUL as a NL within its
" item: the path is what comes before the first); any other line (a message) is left out.
function! s:items(lines) abort
  let items = []
  for line in a:lines
    let at = stridx(line, "\n")
    let m = at < 1 ? [] : matchlist(strpart(line, at + 1), s:row)
    if !empty(m)
      call add(items, {'filename': strpart(line, 0, at), 'lnum': str2nr(m[1]), 'col': str2nr(m[2]), 'vcol': 0,
            \ 'text': m[3]})
    endif
  endfor
  return items
endfunction

function! s:error(lines, code) abort
  let msg = join(filter(copy(a:lines), 'v:val =~# "^vaultq"'), ' ')
  echohl ErrorMsg
  echomsg empty(msg) ? 'vaultd: vaultq exited ' . a:code : msg
  echohl None
endfunction

" Fill the quickfix list (or the location list, `loc`) with vaultq's rows for `args`.
function! s:fill(args, title, loc) abort
  let [lines, code] = s:run(a:args)
  let items = s:items(lines)
  if code != 0 && code != 4 && empty(items)
    if code == 1
      echomsg 'vaultd: nothing found for ' . a:title
    else
      call s:error(lines, code)
    endif
  endif
  if a:loc
    call setloclist(0, [], ' ', {'title': a:title, 'items': items})
    lwindow
  else
    call setqflist([], ' ', {'title': a:title, 'items': items})
    cwindow
  endif
  return len(items)
endfunction

function! s:note(arg) abort
  return empty(a:arg) ? expand('%:p') : a:arg
endfunction

function! vaultd#search(words) abort
  return s:fill(['search', '--format', 'vimgrep', '--null', a:words], 'VaultSearch ' . a:words, 0)
endfunction

function! vaultd#grep(words) abort
  return s:fill(['grep', '--format', 'vimgrep', '--null', '--', a:words], 'VaultGrep ' . a:words, 0)
endfunction

function! vaultd#backlinks(note) abort
  let note = s:note(a:note)
  return s:fill(['backlinks', '--format', 'vimgrep', '--null', '--', note], 'VaultBacklinks ' . note, 1)
endfunction

function! vaultd#links(note) abort
  let note = s:note(a:note)
  return s:fill(['links', '--format', 'vimgrep', '--null', '--', note], 'VaultLinks ' . note, 1)
endfunction

function! vaultd#broken() abort
  return s:fill(['broken', '--format', 'vimgrep', '--null'], 'VaultBroken', 0)
endfunction

" The sections `vaultq context` gives, one item each: its first line, to its last (read
" from its JSON: any file name).
function! vaultd#context(words) abort
  let [lines, code] = s:run(['context', '--json', a:words])
  let json = join(filter(copy(lines), 'v:val =~# "^{"'), '')
  let items = []
  if !empty(json)
    let res = json_decode(json)
    let root = vaultd#vault()
    for it in res.items
      call add(items, {'filename': (empty(root) || it.path =~# '^/' ? '' : root . '/') . it.path,
            \ 'lnum': it.first, 'end_lnum': it.last, 'col': 1,
            \ 'text': it.title . (empty(get(it, 'why', '')) ? '' : ' (' . it.why . ')')})
    endfor
  endif
  if code != 0 && code != 4 && empty(items)
    call s:error(lines, code)
  endif
  call setqflist([], ' ', {'title': 'VaultContext ' . a:words, 'items': items})
  cwindow
  return len(items)
endfunction

" The vault's folder: g:vaultd_vault, else the one the daemon serves (asked once).
function! vaultd#vault() abort
  if !empty(get(g:, 'vaultd_vault', ''))
    return fnamemodify(expand(g:vaultd_vault), ':p:s?/$??')
  endif
  if empty(s:vault)
    let [lines, code] = s:run(['status', '--json'])
    if code == 0 || code == 4
      try
        let s:vault = json_decode(join(filter(lines, 'v:val !~# "^vaultq"'), "\n")).vault
      catch
      endtry
    endif
  endif
  return s:vault
endfunction

" A Markdown or Org buffer of the vault: gf through vaultq resolve, :grep through vaultq grep.
function! vaultd#setup_buffer() abort
  let vault = vaultd#vault()
  let file = expand('%:p')
  if empty(vault) || stridx(file, vault . '/') != 0
    return
  endif
  let &l:grepprg = s:command(['grep', '--format', 'vimgrep'])
  setlocal grepformat=%f:%l:%c:%m
  nnoremap <buffer> <silent> gf :<C-U>call vaultd#follow()<CR>
endfunction

" The cursor's 1-based column in code points, as vaultq's --col counts (and the LSP, and
" Emacs): charcol() counts a composing character (U+FE0F after an emoji, a combining accent)
" with the one before it, one short for each before the cursor; strchars() counts each.
function! vaultd#col() abort
  return strchars(strpart(getline('.'), 0, col('.') - 1)) + 1
endfunction

" Follow the link under the cursor: `vaultq resolve` reads the line at the cursor's
" column (vaultd#col), from this note; the character just past a link's end is not on it.
" To its heading or block line; an ambiguous name gives its candidates in the location
" list; no link there: Vim's own gf.
function! vaultd#follow() abort
  let [lines, code] = s:run(['resolve', '--json', '--from', expand('%:p'), '--col', string(vaultd#col()),
        \ '--', getline('.')])
  let json = join(filter(copy(lines), 'v:val =~# "^{"'), '')
  if empty(json)
    if code == 1 && join(lines) =~# 'no link at column'
      normal! gf
    else
      call s:error(lines, code)
    endif
    return
  endif
  let res = json_decode(json)
  if res.path isnot v:null
    execute 'edit' fnameescape(res.vault . '/' . res.path)
    call cursor(res.line is v:null ? 1 : res.line, 1)
    normal! zv
  elseif res.url isnot v:null && res.broken is v:null
    if exists('*netrw#BrowseX')
      call netrw#BrowseX(res.url, 0)
    else
      echomsg 'vaultd: ' . res.url
    endif
  else
    if !empty(res.candidates)
      call setloclist(0, [], ' ', {'title': res.link . ': ' . res.broken,
            \ 'items': map(copy(res.candidates), '{"filename": res.vault . "/" . v:val, "lnum": 1, "text": res.link}')})
      lwindow
    endif
    echohl ErrorMsg
    echomsg 'vaultd: ' . res.link . ': ' . (res.broken is v:null ? 'not a note' : res.broken)
    echohl None
  endif
endfunction
