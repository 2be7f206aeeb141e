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

" -- Rename, history, undo: writes into the vault ---------------------------------------

" vaultq's JSON answer in `lines` (a dict), {} when there is none.
function! s:json(lines) abort
  let json = join(filter(copy(a:lines), 'v:val =~# "^{"'), '')
  return empty(json) ? {} : json_decode(json)
endfunction

" A file's absolute path, every symbolic link in it resolved (the daemon's vault is).
function! s:real(path) abort
  return resolve(fnamemodify(a:path, ':p'))
endfunction

" The loaded buffers of files in the vault at `vault` (getbufinfo() items).
function! s:vault_buffers(vault) abort
  let vault = s:real(a:vault)
  return filter(getbufinfo({'bufloaded': 1}), {_, b -> !empty(b.name) && stridx(s:real(b.name), vault . '/') == 0})
endfunction

" Write the vault's modified buffers (g:vaultd_save_before_write, default on: a `:wall` of
" the vault's buffers only); one left modified refuses, saying `why`. Returns 0 then.
function! s:save_vault_buffers(vault, why) abort
  let modified = filter(s:vault_buffers(a:vault), 'v:val.changed')
  if get(g:, 'vaultd_save_before_write', 1)
    let [here, view] = [bufnr('%'), winsaveview()]
    for b in modified
      execute 'silent keepalt keepjumps hide buffer' b.bufnr
      update
    endfor
    execute 'silent keepalt keepjumps hide buffer' here
    call winrestview(view)
    let modified = filter(s:vault_buffers(a:vault), 'v:val.changed')
  endif
  if !empty(modified)
    call s:warn('vaultd: write ' . join(map(modified, 'fnamemodify(v:val.name, ":~:.")'), ', ') . ' first: '
          \ . a:why . ' (or let g:vaultd_save_before_write = 1)')
    return 0
  endif
  return 1
endfunction

function! s:warn(msg) abort
  echohl ErrorMsg
  echomsg a:msg
  echohl None
endfunction

" Run vaultq's writing command `args` (with --json): its answer, {} on a refusal (said).
" A refusal because a note changed since it was indexed (one just written) is asked again
" for g:vaultd_index_wait seconds (default 10): the daemon indexes it meanwhile.
function! s:write(args) abort
  let deadline = reltimefloat(reltime()) + get(g:, 'vaultd_index_wait', 10)
  while 1
    let [lines, code] = s:run(a:args)
    let res = s:json(lines)
    if code == 0 && !empty(res)
      return res
    endif
    if join(lines) !~# 'changed since it was indexed' || reltimefloat(reltime()) > deadline
      call s:error(lines, code)
      return {}
    endif
    sleep 200m
  endwhile
endfunction

" Let the daemon see no swap file of this Vim beside a vault file (its buffers are written:
" they hold nothing a swap file would save), so that only another editor's refuses a rename.
" Returns the buffers whose 'swapfile' was turned off, to turn on again (s:swap_on).
function! s:swap_off(vault) abort
  let off = filter(s:vault_buffers(a:vault), '!empty(swapname(v:val.bufnr))')
  for b in off
    call setbufvar(b.bufnr, '&swapfile', 0)
  endfor
  return map(off, 'v:val.bufnr')
endfunction

function! s:swap_on(bufs) abort
  for nr in a:bufs
    if bufloaded(nr)
      call setbufvar(nr, '&swapfile', 1)
    endif
  endfor
endfunction

" The number of the buffer of the file `path` (absolute), -1 for none.
function! s:buffer_of(path) abort
  let path = s:real(a:path)
  for b in getbufinfo()
    if !empty(b.name) && s:real(b.name) ==# path
      return b.bufnr
    endif
  endfor
  return -1
endfunction

" After vaultd wrote into the vault: a buffer of the note `moved` ([from, to], paths in the
" vault) becomes one of `to` (`:edit` where it was shown), then the unmodified buffers of
" `files` are read again (`:checktime`, with 'autoread' on for it).
function! s:after_write(vault, files, moved) abort
  if !empty(a:moved) && a:moved[0] !=# a:moved[1]
    let old = s:buffer_of(a:vault . '/' . a:moved[0])
    let new = fnameescape(a:vault . '/' . a:moved[1])
    if old > 0
      let view = winsaveview()
      for win in win_findbuf(old)
        call win_execute(win, 'keepalt edit ' . new)
      endfor
      if bufnr('%') != old
        call winrestview(view)
      endif
      if !getbufvar(old, '&modified')
        execute 'bwipeout' old
      endif
    endif
  endif
  let autoread = &g:autoread
  set autoread
  try
    for f in a:files
      let nr = s:buffer_of(a:vault . '/' . f)
      if nr > 0 && bufloaded(nr) && !getbufvar(nr, '&modified') && filereadable(a:vault . '/' . f)
        execute 'checktime' nr
      endif
    endfor
  finally
    let &g:autoread = autoread
  endtry
endfunction

" The heading on the cursor's line: its text, '' when there is none (Markdown `#`, Org `*`).
function! s:heading() abort
  let m = matchlist(getline('.'), '^\%(#\{1,6}\|\*\+\)\s\+\(.\{-}\)\s*$')
  return empty(m) ? '' : m[1]
endfunction

" The note to rename: the one the link under the cursor leads to, else this buffer's.
" [absolute path, ''] or ['', why not].
function! s:rename_target() abort
  if !empty(getline('.'))
    let [lines, code] = s:run(['resolve', '--json', '--from', expand('%:p'), '--col', string(vaultd#col()),
          \ '--', getline('.')])
    let res = s:json(lines)
    if !empty(res)
      if res.path is v:null
        return ['', res.link . ' leads to no note' . (res.broken is v:null ? '' : ' (' . res.broken . ')')]
      endif
      return [res.vault . '/' . res.path, '']
    endif
  endif
  return empty(expand('%')) ? ['', 'this buffer is no note'] : [expand('%:p'), '']
endfunction

" :VaultRename TITLE: the note the link under the cursor leads to, else this buffer's note,
" titled `title`, every link to it rewritten (a Denote note keeps its identifier). With
" `heading` (:VaultRename!): the heading on the cursor's line, and the links into it. The
" vault's buffers are written first, read again after; a buffer of the renamed note then
" shows it at its new name. Returns vaultq's answer ({} when refused).
function! vaultd#rename(title, heading) abort
  let vault = vaultd#vault()
  if a:heading
    if empty(s:heading())
      call s:warn('vaultd: no heading on this line')
      return {}
    endif
    let [note, why, line] = [expand('%:p'), '', ['--line', string(line('.'))]]
  else
    let [note, why] = s:rename_target()
    let line = []
  endif
  if !empty(why)
    call s:warn('vaultd: ' . why)
    return {}
  endif
  if empty(vault) || !s:save_vault_buffers(vault, 'renaming rewrites the links in other notes')
    return {}
  endif
  let swaps = s:swap_off(vault)
  try
    let res = s:write(['rename', '--json'] + line + ['--', note, a:title])
  finally
    call s:swap_on(swaps)
  endtry
  if !empty(res)
    call s:after_write(vault, res.files, [res.note, res.to])
    echomsg printf('vaultd: renamed %s -> %s, %d links rewritten (undo: :VaultUndo %s)',
          \ res.note . (a:heading ? ':' . line('.') : ''), a:heading ? a:title : res.to, res.rewritten, res.op)
  endif
  return res
endfunction

" Every write vaultd made into the vault, newest first (vaultq history's entries).
function! s:history() abort
  let [lines, code] = s:run(['history', '--json'])
  let res = s:json(lines)
  if empty(res)
    call s:error(lines, code)
    return []
  endif
  return res.history
endfunction

function! s:label(e) abort
  let to = get(a:e, 'to', v:null)
  let heading = get(a:e, 'heading', v:null)
  return printf('%s  %-8s %-9s %s%s', a:e.op, a:e.status, a:e.kind, a:e.note,
        \ heading isnot v:null && to isnot v:null ? ':' . heading . ' heading renamed'
        \ : to isnot v:null ? ' -> ' . to : '')
endfunction

" :VaultHistory: vaultd's writes (splits, renames, remembered entries), newest first, into
" the quickfix list: each at its note (a renamed one at its new name; a heading's line).
function! vaultd#history() abort
  let vault = vaultd#vault()
  let items = []
  for e in s:history()
    let to = get(e, 'to', v:null)
    let path = e.status ==# 'done' && to isnot v:null ? to : e.note
    let heading = get(e, 'heading', v:null)
    call add(items, {'filename': vault . '/' . path, 'lnum': type(heading) == v:t_number ? heading : 1,
          \ 'col': 1, 'text': s:label(e), 'valid': filereadable(vault . '/' . path)})
  endfor
  call setqflist([], ' ', {'title': 'VaultHistory', 'items': items})
  cwindow
  return len(items)
endfunction

" :VaultUndo [OP]: undo OP (completed from the history), by default the newest write still
" done; the files it wrote as they were, byte for byte (refused when one changed since), a
" renamed note back at its name with its buffer. Buffers as :VaultRename.
function! vaultd#undo(op) abort
  let vault = vaultd#vault()
  let history = s:history()
  let done = filter(copy(history), 'v:val.status ==# "done"')
  let entry = empty(a:op) ? get(done, 0, {}) : get(filter(copy(history), 'v:val.op ==# a:op'), 0, {})
  if empty(entry)
    call s:warn(empty(a:op) ? 'vaultd: nothing to undo' : 'vaultd: no operation ' . a:op . ' (see :VaultHistory)')
    return {}
  endif
  if empty(vault) || !s:save_vault_buffers(vault, 'undoing restores notes')
    return {}
  endif
  let res = s:write(['undo', '--json', '--', entry.op])
  if !empty(res)
    let to = get(entry, 'to', v:null)
    call s:after_write(vault, res.restored, to is v:null ? [] : [to, entry.note])
    echomsg printf('vaultd: undid %s (%s), %d files restored', join(res.undone, ', '), s:label(entry),
          \ len(res.restored))
  endif
  return res
endfunction

" The operations :VaultUndo can undo, newest first, for its completion.
function! vaultd#undo_complete(lead, line, pos) abort
  return filter(map(filter(s:history(), 'v:val.status ==# "done"'), 'v:val.op'), 'stridx(v:val, a:lead) == 0')
endfunction
