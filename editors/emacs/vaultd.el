;;; vaultd.el --- Search, backlinks and links of a vaultd notes vault  -*- lexical-binding: t; -*-

;; Version: 0.1.0
;; Package-Requires: ((emacs "27.1"))
;; Keywords: outlines, hypermedia, matching
;; URL: https://github.com/vaultd/vaultd
;; SPDX-License-Identifier: MIT

;;; Commentary:

;; A face of vaultd for Emacs users of Org, Denote and Markdown notes: every
;; command asks the running daemon through `vaultq' (its JSON answers) and lands
;; on the exact line and character of what it found.
;;
;;   M-x vaultd-search        live search with preview (consult when present;
;;                            else a hits buffer whose n/p show each hit)
;;   M-x vaultd-grep          every line holding the words (consult when present,
;;                            as consult-ripgrep; else a grep-mode buffer: RET,
;;                            n/p and M-g n land on each match's character)
;;   M-x vaultd-backlinks     the notes linking to this one, in a buffer; RET lands
;;   M-x vaultd-links         the links out of this note, each with where it leads
;;   M-x vaultd-broken-links  every broken link of the vault, with why
;;   M-x vaultd-follow-link   where the link at point leads (any syntax vaultd reads;
;;                            the character just past a link is not on it)
;;   M-x vaultd-find-note     a note by title, alias, Denote identifier or file name
;;   M-x vaultd-insert-link   a link to a note, in this buffer's syntax
;;   M-x vaultd-insert-context  what the notes say about a query, within a budget
;;   M-x vaultd-rename        rename this note, the note the link at point leads to,
;;                            or the heading at point: every link to it rewritten
;;   M-x vaultd-history       every write vaultd made (splits, renames), newest first;
;;                            u undoes the one on the line
;;   M-x vaultd-undo          undo the newest of them (C-u: choose one)
;;
;; Every jump into an Org buffer ends with `org-reveal', so point is never left
;; inside a folded subtree.  Columns: vaultq's JSON gives every place's `col'
;; in characters (its `byte_col' is for Vim and grep), which is what Emacs
;; counts: it lands exactly on Korean, Japanese and emoji lines.
;;
;; The daemon is found as vaultq finds it: `vaultd-vaultq-args' (say
;; ("--vault" "~/notes")), else the vault around `default-directory'.
;; The LSP server (`vaultd lsp', with eglot) is the other way in: see docs/editors.md.

;;; Code:

(require 'json)
(require 'seq)
(require 'subr-x)

(declare-function org-reveal "org" (&optional siblings))
(declare-function org-at-heading-p "org" (&optional invisible-not-ok))
(declare-function org-get-heading "org" (&optional no-tags no-todo no-priority no-comment))
(declare-function consult--read "ext:consult")
(declare-function consult--dynamic-collection "ext:consult")
(declare-function consult--lookup-member "ext:consult")
(declare-function consult--grep "ext:consult")
(declare-function consult--command-split "ext:consult")
(declare-function consult--ripgrep-make-builder "ext:consult")

(defgroup vaultd nil
  "Search and links of a vaultd notes vault."
  :group 'outlines
  :prefix "vaultd-")

(defcustom vaultd-vaultq-program "vaultq"
  "The vaultq program."
  :type 'string)

(defcustom vaultd-vaultq-args nil
  "Arguments given to vaultq before the command, e.g. (\"--vault\" \"~/notes\")."
  :type '(repeat string))

(defcustom vaultd-search-limit 30
  "At most this many notes for a search."
  :type 'integer)

(defcustom vaultd-context-budget 1500
  "Tokens of context `vaultd-insert-context' inserts at most."
  :type 'integer)

(defcustom vaultd-save-before-write 'ask
  "What `vaultd-rename' and `vaultd-undo' first do with the vault's buffers.
Both write notes other than this one, and revert those notes' buffers after:
`ask' offers to save each modified one (`save-some-buffers'), t saves them
all, nil saves none; a buffer of the vault left modified refuses the command."
  :type '(choice (const :tag "Ask for each" ask)
                 (const :tag "Save them all" t)
                 (const :tag "Refuse" nil)))

(defcustom vaultd-index-wait 10
  "Seconds a rename waits for the daemon to index the notes just saved.
vaultd refuses to rename from a note changed since it was indexed."
  :type 'number)

(defcustom vaultd-use-consult t
  "Use consult for live search with preview when it is installed."
  :type 'boolean)

;;;; vaultq

(defun vaultd--run (args)
  "Run vaultq with ARGS (after `vaultd-vaultq-args'): (EXIT-CODE STDOUT STDERR)."
  (let ((err (make-temp-file "vaultd-err")))
    (unwind-protect
        (with-temp-buffer
          (let* ((coding-system-for-read 'utf-8)
                 (coding-system-for-write 'utf-8)
                 (code (apply #'call-process vaultd-vaultq-program nil (list t err) nil
                              (append vaultd-vaultq-args args))))
            (list code (buffer-string)
                  (string-trim (with-temp-buffer
                                 (let ((coding-system-for-read 'utf-8))
                                   (insert-file-contents err))
                                 (buffer-string))))))
      (delete-file err))))

(defun vaultd--parse (json)
  "JSON, vaultq's answer, as an alist."
  (json-parse-string json :object-type 'alist :array-type 'list :null-object nil :false-object nil))

(defun vaultd--call (&rest args)
  "Run vaultq with ARGS; return its JSON answer (an alist), nil for no result.
A daemon that is down, or a bad request, is a `user-error' in vaultq's words."
  (pcase-let ((`(,code ,out ,err) (vaultd--run args)))
    (cond
     ((and (memq code '(0 1)) (> (length out) 0)) (vaultd--parse out))
     ((eq code 1) nil)
     (t (user-error "vaultd: %s" err)))))

(defvar vaultd--roots (make-hash-table :test #'equal)
  "The vault of each folder asked from: `default-directory' -> vault root.")

(defun vaultd--root ()
  "The root of the vault the daemon for `default-directory' serves."
  (let ((dir (expand-file-name default-directory)))
    (or (gethash dir vaultd--roots)
        (puthash dir (file-name-as-directory (alist-get 'vault (vaultd--call "status" "--json")))
                 vaultd--roots))))

(defun vaultd--file (root path)
  "PATH of the vault at ROOT as an absolute file name."
  (expand-file-name path root))

;;;; Landing

(defun vaultd--goto-char-column (line col)
  "Go to LINE (1-based) and its character column COL (1-based)."
  (goto-char (point-min))
  (forward-line (1- line))
  (forward-char (min (max 0 (1- col)) (- (line-end-position) (point)))))

(defun vaultd--reveal ()
  "Make point visible: in Org, unfold what hides it."
  (when (derived-mode-p 'org-mode)
    (org-reveal)))

(defun vaultd--land (loc &optional window)
  "Visit LOC, a list (FILE LINE COL): a 1-based line and character column.
In WINDOW, else the selected one.  Return the buffer."
  (pcase-let ((`(,file ,line ,col) loc))
    (let ((buf (find-file-noselect file)))
      (if window
          (set-window-buffer window buf)
        (switch-to-buffer buf))
      (with-current-buffer buf
        (widen)
        (vaultd--goto-char-column line col)
        (vaultd--reveal)
        (when window (set-window-point window (point))))
      buf)))

;;;; A list of places: hits, backlinks

(defvar vaultd-list-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "RET") #'vaultd-list-visit)
    (define-key map (kbd "o") #'vaultd-list-show)
    (define-key map (kbd "n") #'vaultd-list-next)
    (define-key map (kbd "p") #'vaultd-list-previous)
    map)
  "Keys of a vaultd list: RET lands, n and p preview the next and previous.")

(define-derived-mode vaultd-list-mode special-mode "vaultd"
  "Places found by vaultd, one a line.
RET visits one, n/p preview the next/previous."
  (setq truncate-lines t))

(defun vaultd--fill-list (name header places)
  "Show PLACES, each (LABEL . LOC), in buffer NAME under HEADER; return the buffer."
  (let ((buf (get-buffer-create name)))
    (with-current-buffer buf
      (let ((inhibit-read-only t))
        (erase-buffer)
        (vaultd-list-mode)
        (insert header "\n")
        (dolist (p places)
          (insert (propertize (car p) 'vaultd-loc (cdr p)) "\n"))
        (goto-char (point-min))
        (forward-line 1)))
    buf))

(defun vaultd--loc-here ()
  (or (get-text-property (line-beginning-position) 'vaultd-loc)
      (user-error "No place on this line")))

(defun vaultd-list-visit ()
  "Visit the place on this line."
  (interactive)
  (let ((loc (vaultd--loc-here)))
    (select-window (or (get-mru-window nil nil t) (next-window)))
    (vaultd--land loc)))

(defun vaultd-list-show ()
  "Show the place on this line in another window, staying here."
  (interactive)
  (let ((loc (vaultd--loc-here)))
    (vaultd--land loc (display-buffer (find-file-noselect (car loc)) '(nil (inhibit-same-window . t))))))

(defun vaultd-list-next (&optional n)
  "Move to the next place (N places on) and show it."
  (interactive "p")
  (forward-line (or n 1))
  (when (get-text-property (line-beginning-position) 'vaultd-loc)
    (vaultd-list-show)))

(defun vaultd-list-previous (&optional n)
  "Move to the previous place (N places back) and show it."
  (interactive "p")
  (vaultd-list-next (- (or n 1))))

;;;; Search

(defun vaultd--search-places (query)
  "Each hit line of QUERY as (LABEL . (FILE LINE COL))."
  (let* ((res (vaultd--call "search" "--json" "-n" (number-to-string vaultd-search-limit) "--" query))
         (root (and res (file-name-as-directory (alist-get 'vault res)))))
    (mapcan (lambda (hit)
              (let ((path (alist-get 'path hit)))
                (mapcar (lambda (s)
                          (cons (format "%s:%d: %s" path (alist-get 'line s) (alist-get 'text s))
                                (list (vaultd--file root path) (alist-get 'line s) (alist-get 'col s))))
                        (alist-get 'snippets hit))))
            (and res (alist-get 'hits res)))))

(defun vaultd--preview-state ()
  "A consult state function: preview each candidate's place.
The windows are put back, and buffers opened for it killed, at the end."
  (let ((conf (current-window-configuration))
        (before (buffer-list))
        (opened nil))
    (lambda (action cand)
      (pcase action
        ('preview
         (when-let ((loc (and cand (get-text-property 0 'vaultd-loc cand))))
           (let ((existed (get-file-buffer (car loc))))
             (let ((buf (vaultd--land loc (minibuffer-selected-window))))
               (unless (or existed (memq buf opened)) (push buf opened))))))
        ('exit
         (set-window-configuration conf)
         (dolist (b opened)
           (unless (memq b before) (kill-buffer b))))))))

(defun vaultd--consult-search (initial)
  (let ((cand (consult--read
               (consult--dynamic-collection
                (lambda (input)
                  (mapcar (lambda (p) (propertize (car p) 'vaultd-loc (cdr p)))
                          (and (> (length (string-trim input)) 0) (vaultd--search-places input)))))
               :prompt "vaultd search: " :initial initial :sort nil :require-match t
               :lookup #'consult--lookup-member :state (vaultd--preview-state)
               :category 'vaultd-hit)))
    (when cand
      (vaultd--land (get-text-property 0 'vaultd-loc cand)))))

;;;###autoload
(defun vaultd-search (query)
  "Search the vault for QUERY.
With consult: live, each hit previewed as you move; else the hits in a buffer
where n/p preview and RET lands."
  (interactive (list (if (and vaultd-use-consult (require 'consult nil t))
                         nil
                       (read-string "vaultd search: " nil nil (thing-at-point 'symbol t)))))
  (if (null query)
      (vaultd--consult-search (thing-at-point 'symbol t))
    (let ((places (vaultd--search-places query)))
      (unless places (user-error "vaultd: no note matches %s" query))
      (pop-to-buffer (vaultd--fill-list "*vaultd search*" (format "vaultd search: %s" query) places)))))

;;;; Grep

(defun vaultd--grep-command (words &rest options)
  "The vaultq command line (a list) of a grep for WORDS, OPTIONS before them."
  (append (list vaultd-vaultq-program) vaultd-vaultq-args (list "grep") options (list "--" words)))

(defun vaultd--grep-highlighter (words case-sensitive)
  "A function that puts a face on each of WORDS in a string.
Case matters when CASE-SENSITIVE.  consult places point on the first of
them, as it does for consult-ripgrep."
  (let ((regexps (mapcar #'regexp-quote
                         (condition-case nil (split-string-and-unquote words)
                           (error (split-string words))))))
    (lambda (str)
      (let ((case-fold-search (not case-sensitive)))
        (dolist (re regexps)
          (let ((i 0))
            (while (and (< i (length str)) (string-match re str i) (> (match-end 0) i))
              (add-face-text-property (match-beginning 0) (match-end 0) 'consult-highlight-match nil str)
              (setq i (match-end 0)))))))))

(defun vaultd--consult-grep-builder (input)
  "consult's command builder: INPUT to (COMMAND . HIGHLIGHTER).
INPUT is the words, then `-- OPTIONS' as consult splits it.  vaultq prints
`--format grep --null' rows, FILE NUL LINE:TEXT, as consult reads grep's."
  (pcase-let ((`(,words . ,opts) (consult--command-split input)))
    (unless (string-blank-p words)
      (cons (apply #'vaultd--grep-command words (append '("--format" "grep" "--null") opts))
            (vaultd--grep-highlighter words (or (member "-s" opts) (member "--case-sensitive" opts)))))))

(defun vaultd--consult-grep (initial)
  "consult's live grep through vaultq from the vault's root, INITIAL typed."
  (consult--grep "vaultd grep"
                 ;; consult 0.33 and later take a function of the paths that gives the
                 ;; builder (as `consult--ripgrep-make-builder' takes one); 0.32 the builder
                 (if (equal (func-arity 'consult--ripgrep-make-builder) '(1 . 1))
                     (lambda (_paths) #'vaultd--consult-grep-builder)
                   #'vaultd--consult-grep-builder)
                 (vaultd--root) initial))

(defvar vaultd-grep-regexp-alist
  '(("^\\([^\0\n]+\\)\\(\0\\)\\([0-9]+\\):\\([0-9]+\\):" 1 3 4 nil nil (2 '(face nil display ":"))))
  "How vaultq's `--format emacs --null' rows are read.
FILE NUL LINE:COLUMN:TEXT, the column a 1-based character column.")

(define-derived-mode vaultd-grep-mode grep-mode "vaultd grep"
  "vaultq grep's rows: RET, n/p and \\[next-error] land on each match.
On its character: columns are characters, counted from 1
\\=(`compilation-first-column'), whatever the line holds (Korean, emoji:
`compilation-error-screen-columns' nil).  g runs it again."
  (setq-local compilation-error-regexp-alist vaultd-grep-regexp-alist)
  (setq-local compilation-first-column 1)
  (setq-local compilation-error-screen-columns nil)
  (add-hook 'next-error-hook #'vaultd--grep-reveal))

(defun vaultd--grep-reveal ()
  "After a jump from a vaultd grep buffer: unfold the Org subtree that hides point."
  (when (and (buffer-live-p next-error-last-buffer)
             (with-current-buffer next-error-last-buffer (derived-mode-p 'vaultd-grep-mode)))
    (vaultd--reveal)))

(defun vaultd--grep-buffer (words)
  "Run vaultq's grep for WORDS in a `vaultd-grep-mode' buffer; return the buffer."
  (require 'grep)
  (let ((default-directory (vaultd--root))
        ;; a pipe, as consult runs it: to a terminal vaultq shows control characters as
        ;; text, the NUL after each file name among them
        (process-connection-type nil))
    (compilation-start (mapconcat #'shell-quote-argument
                                  (vaultd--grep-command words "--format" "emacs" "--null") " ")
                       #'vaultd-grep-mode (lambda (_mode) "*vaultd grep*"))))

;;;###autoload
(defun vaultd-grep (words)
  "Every line of the vault's notes that holds WORDS (as rg -i).
Each lands on its match.  With consult: live, as consult-ripgrep (`-- -s'
after the words: case matters, `-- -w': whole words); else a
`vaultd-grep-mode' buffer."
  (interactive (list (if (and vaultd-use-consult (require 'consult nil t))
                         nil
                       (read-string "vaultd grep: " nil nil (thing-at-point 'symbol t)))))
  (if (null words)
      (vaultd--consult-grep (thing-at-point 'symbol t))
    (vaultd--grep-buffer words)))

;;;; Backlinks

(defun vaultd--backlink-places (note)
  "The links into NOTE as (LABEL . (FILE LINE COL))."
  (let* ((root (vaultd--root))
         (res (vaultd--call "backlinks" "--json" "--limit" "100000" "--" note))) ; all of them, not a page
    (mapcar (lambda (b)
              (let ((path (alist-get 'path b)))
                (cons (format "%s:%d:%d: %s" path (alist-get 'line b) (alist-get 'col b)
                              (string-trim (or (alist-get 'text b) (alist-get 'raw b))))
                      (list (vaultd--file root path) (alist-get 'line b) (alist-get 'col b)))))
            (and res (alist-get 'backlinks res)))))

;;;###autoload
(defun vaultd-backlinks (&optional file)
  "Show the links into FILE (this buffer's file), each landing on its link."
  (interactive)
  (let* ((file (expand-file-name (or file (buffer-file-name) (user-error "This buffer visits no file"))))
         (places (let ((default-directory (file-name-directory file)))
                   (vaultd--backlink-places file))))
    (unless places (user-error "vaultd: nothing links to %s" (file-name-nondirectory file)))
    (pop-to-buffer (vaultd--fill-list "*vaultd backlinks*"
                                      (format "Links into %s" (file-name-nondirectory file)) places))))

;;;; Links out, broken links

(defun vaultd--link-label (path link)
  "How LINK (an item of vaultq's links or broken) of the note at PATH is listed."
  (let ((to (alist-get 'resolved link)) (why (alist-get 'broken link)))
    (format "%s:%d:%d: %s  %s" path (alist-get 'line link) (alist-get 'col link) (alist-get 'raw link)
            (cond ((and to why) (format "-> %s (broken: %s)" to why))
                  (why (format "(broken: %s)" why))
                  (to (format "-> %s%s" to (if (alist-get 'resolved_line link)
                                                (format ":%d" (alist-get 'resolved_line link)) "")))
                  (t "")))))

(defun vaultd--link-places (root path links)
  "LINKS of the note at PATH (in the vault at ROOT) as (LABEL . (FILE LINE COL))."
  (mapcar (lambda (l)
            (cons (vaultd--link-label path l)
                  (list (vaultd--file root path) (alist-get 'line l) (alist-get 'col l))))
          links))

;;;###autoload
(defun vaultd-links (&optional file)
  "Show the links out of FILE (this buffer's file), each landing on its link.
Each says where it leads, or why it is broken."
  (interactive)
  (let* ((file (expand-file-name (or file (buffer-file-name) (user-error "This buffer visits no file"))))
         (default-directory (file-name-directory file))
         (root (vaultd--root))
         (res (vaultd--call "links" "--json" "--limit" "100000" "--" file))
         (places (and res (vaultd--link-places root (alist-get 'note res) (alist-get 'links res)))))
    (unless places (user-error "vaultd: no links out of %s" (file-name-nondirectory file)))
    (pop-to-buffer (vaultd--fill-list "*vaultd links*"
                                      (format "Links out of %s" (file-name-nondirectory file)) places))))

;;;###autoload
(defun vaultd-broken-links ()
  "Show every broken link of the vault, why it is broken, each landing on its link."
  (interactive)
  (let* ((root (vaultd--root))
         (res (vaultd--call "broken" "--json"))
         (places (mapcan (lambda (l) (vaultd--link-places root (alist-get 'path l) (list l)))
                         (and res (alist-get 'broken res)))))
    (unless places (user-error "vaultd: no broken links"))
    (pop-to-buffer (vaultd--fill-list "*vaultd broken links*"
                                      (format "%d broken links" (length places)) places))))

;;;; Links

(defun vaultd--resolve-at-point ()
  "Where the link at point leads: vaultq's resolve answer for this line and column."
  (let ((line (buffer-substring-no-properties (line-beginning-position) (line-end-position)))
        (col (1+ (- (point) (line-beginning-position)))))
    (when (string-empty-p line) (user-error "No link at point"))
    (vaultd--call "resolve" "--json" "--from" (or (buffer-file-name) default-directory)
                  "--col" (number-to-string col) "--" line)))

;;;###autoload
(defun vaultd-follow-link ()
  "Go where the link at point leads, to its heading or block.
Every link syntax vaultd reads: wikilinks, Markdown, Org file:, id:, denote:."
  (interactive)
  (let* ((res (or (vaultd--resolve-at-point) (user-error "vaultd: no link at point")))
         (root (file-name-as-directory (alist-get 'vault res)))
         (path (alist-get 'path res)))
    (cond
     ((alist-get 'url res) (browse-url (alist-get 'url res)))
     ((alist-get 'candidates res)
      (let ((pick (completing-read (format "%s is ambiguous: " (alist-get 'link res))
                                   (alist-get 'candidates res) nil t)))
        (vaultd--land (list (vaultd--file root pick) 1 1))))
     ((null path) (user-error "vaultd: %s: %s" (alist-get 'link res) (alist-get 'broken res)))
     (t (when (alist-get 'broken res)
          (message "vaultd: %s: %s" (alist-get 'link res) (alist-get 'broken res)))
        (push-mark nil t)
        (vaultd--land (list (vaultd--file root path) (or (alist-get 'line res) 1) 1))))))

(defun vaultd--notes ()
  "Every note as (CANDIDATE . NOTE): title, aliases, Denote identifier and path."
  (let ((root (vaultd--root)))
    (mapcar (lambda (n)
              (let ((aliases (alist-get 'aliases n)) (id (alist-get 'id n)))
                (cons (concat (alist-get 'title n)
                              (if aliases (format "  (%s)" (string-join aliases ", ")) "")
                              (if id (format "  %s" id) "")
                              (propertize (format "  %s" (alist-get 'path n)) 'face 'shadow))
                      (cons (cons 'file (vaultd--file root (alist-get 'path n))) n))))
            ;; every note, not the first page of 1,000 (`list' is paged: vaultd/ops.py LIMITS)
            (alist-get 'notes (vaultd--call "list" "--json" "--limit" "100000")))))

(defun vaultd--read-note (prompt)
  (let* ((notes (vaultd--notes))
         (pick (completing-read prompt notes nil t)))
    (cdr (assoc pick notes))))

;;;###autoload
(defun vaultd-find-note ()
  "Visit a note chosen by title, alias, Denote identifier or path."
  (interactive)
  (vaultd--land (list (alist-get 'file (vaultd--read-note "Note: ")) 1 1)))

;;;###autoload
(defun vaultd-insert-link ()
  "Insert a link to a note chosen by title, alias or identifier.
Org's [[denote:ID][Title]] (or [[file:path][Title]]) in Org buffers,
[[name]] elsewhere."
  (interactive)
  (let* ((n (vaultd--read-note "Link to: "))
         (file (alist-get 'file n))
         (title (alist-get 'title n))
         (id (alist-get 'id n)))
    (insert (if (derived-mode-p 'org-mode)
                (format "[[%s][%s]]" (if id (concat "denote:" id)
                                       (concat "file:" (file-relative-name file)))
                        title)
              (format "[[%s]]" (file-name-sans-extension (file-name-nondirectory file)))))))

;;;###autoload
(defun vaultd-insert-context (query)
  "Insert what the notes say about QUERY (vaultq context).
At most `vaultd-context-budget' tokens."
  (interactive "sContext for: ")
  (let ((text (with-temp-buffer
                (let ((code (apply #'call-process vaultd-vaultq-program nil t nil
                                   (append vaultd-vaultq-args
                                           (list "context" "--budget" (number-to-string vaultd-context-budget)
                                                 "--" query)))))
                  (unless (memq code '(0 1)) (user-error "vaultd: %s" (string-trim (buffer-string))))
                  (buffer-string)))))
    (insert text)))

;;;; Rename, history, undo

(defun vaultd--write (&rest args)
  "Run vaultq's command ARGS, one that writes into the vault; its JSON answer.
A refusal is a `user-error' in vaultq's words, but for the one that says a
note changed since it was indexed (just saved): that is asked again, for at
most `vaultd-index-wait' seconds."
  (let ((deadline (+ (float-time) vaultd-index-wait))
        (res nil))
    (while (pcase-let ((`(,code ,out ,err) (vaultd--run args)))
             (cond
              ((and (eq code 0) (> (length out) 0)) (setq res (vaultd--parse out)) nil)
              ((and (string-match-p "changed since it was indexed" err) (< (float-time) deadline))
               (sleep-for 0.2)
               t)
              (t (user-error "vaultd: %s" (if (string-empty-p err) (format "vaultq exited %s" code) err))))))
    res))

(defun vaultd--in-vault-p (root &optional buffer)
  "Whether BUFFER (this one) visits a file in the vault at ROOT."
  (let ((file (buffer-file-name buffer)))
    (and file (file-in-directory-p file root))))

(defun vaultd--save-vault-buffers (root why)
  "Save the modified buffers of the vault at ROOT as `vaultd-save-before-write'
says.  One left modified is a `user-error' saying WHY it must be saved."
  (when vaultd-save-before-write
    (save-some-buffers (eq vaultd-save-before-write t) (lambda () (vaultd--in-vault-p root))))
  (let ((left nil))
    (dolist (b (buffer-list))
      (when (and (buffer-modified-p b) (vaultd--in-vault-p root b))
        (push (buffer-name b) left)))
    (when left
      (user-error "vaultd: save %s first: %s" (string-join (nreverse left) ", ") why))))

(defun vaultd--after-write (root files &optional moved)
  "Show what vaultd wrote into the vault at ROOT.
The buffer visiting the note MOVED, (FROM . TO), visits TO; the unmodified
buffers of FILES (paths in the vault) are reverted from their files."
  (when-let ((buf (and moved (not (equal (car moved) (cdr moved)))
                       (find-buffer-visiting (vaultd--file root (car moved))))))
    (with-current-buffer buf
      (set-visited-file-name (vaultd--file root (cdr moved)) t t)))
  (dolist (f files)
    (let* ((file (vaultd--file root f))
           (buf (find-buffer-visiting file)))
      (when (and buf (not (buffer-modified-p buf)) (file-exists-p file))
        (with-current-buffer buf
          (revert-buffer t t t))))))

(defun vaultd--heading-at-point ()
  "The heading on this line as (LINE . TEXT), nil when there is none.
An Org heading's text without its keyword, priority and tags."
  (save-excursion
    (beginning-of-line)
    (cond
     ((derived-mode-p 'org-mode)
      (and (org-at-heading-p) (cons (line-number-at-pos) (org-get-heading t t t t))))
     ((looking-at "#\\{1,6\\}[ \t]+\\(.*?\\)[ \t]*\\(?:#+[ \t]*\\)?$")
      (cons (line-number-at-pos) (match-string-no-properties 1))))))

(defun vaultd--note-here ()
  "This buffer's note as (FILE . TITLE)."
  (let* ((file (or (buffer-file-name) (user-error "This buffer visits no file")))
         (res (vaultd--call "links" "--json" "--limit" "1" "--" (expand-file-name file))))
    (unless res (user-error "vaultd: %s is not a note of the vault" (file-name-nondirectory file)))
    (cons (expand-file-name file) (alist-get 'title res))))

(defun vaultd--note-at-point ()
  "The note the link at point leads to as (FILE . TITLE).
Nil when point is on no link."
  (let ((res (and (not (string-blank-p (buffer-substring (line-beginning-position) (line-end-position))))
                  (vaultd--resolve-at-point))))
    (cond
     ((null res) nil)
     ((alist-get 'path res)
      (cons (vaultd--file (alist-get 'vault res) (alist-get 'path res)) (alist-get 'title res)))
     (t (user-error "vaultd: %s leads to no note%s" (alist-get 'link res)
                    (if (alist-get 'broken res) (format " (%s)" (alist-get 'broken res)) ""))))))

(defconst vaultd--rename-why "renaming rewrites the links in other notes"
  "Why a rename wants the vault's buffers saved.")

(defun vaultd--rename-target ()
  "What `vaultd-rename' renames, asked: (FILE LINE NEW-TITLE).
LINE is nil for the note.  The vault's buffers are saved (or the command
refused) before anything is asked."
  (vaultd--save-vault-buffers (vaultd--root) vaultd--rename-why)
  (let* ((link (vaultd--note-at-point))
         (heading (and (not link) (vaultd--heading-at-point)))
         (heading (and heading (y-or-n-p (format "Rename the heading \u201c%s\u201d (n: the note)? "
                                                  (cdr heading)))
                       heading))
         (note (or link (vaultd--note-here)))
         (old (if heading (cdr heading) (cdr note))))
    (list (car note) (car heading)
          (read-string (format "Rename %s \u201c%s\u201d to: " (if heading "heading" "note") old)
                       old nil old))))

;;;###autoload
(defun vaultd-rename (file line title)
  "Rename the note of FILE to TITLE, every link to it rewritten.
With LINE, the heading on that line of FILE is renamed to TITLE instead, and
the links into it.  Interactively: the note the link at point leads to, else
this buffer's note, else (point on a heading, if you say so) the heading;
the current title is the default.  A Denote note keeps its identifier and
takes TITLE in its file name and front matter; another note is named TITLE.
The vault's modified buffers are saved first (`vaultd-save-before-write'),
the buffers of every file the rename wrote are reverted, and a buffer visiting
the renamed note then visits its new name.  `vaultd-undo' undoes it."
  (interactive (vaultd--rename-target))
  (let* ((default-directory (file-name-directory (expand-file-name file)))
         (root (vaultd--root)))
    (vaultd--save-vault-buffers root vaultd--rename-why)
    (let ((res (apply #'vaultd--write "rename" "--json"
                      (append (and line (list "--line" (number-to-string line)))
                              (list "--" (expand-file-name file) title)))))
      (vaultd--after-write root (alist-get 'files res) (cons (alist-get 'note res) (alist-get 'to res)))
      (message "vaultd: renamed %s%s -> %s, %d links rewritten (undo: M-x vaultd-undo, %s)"
               (alist-get 'note res) (if line (format ":%d" line) "")
               (if line title (alist-get 'to res)) (or (alist-get 'rewritten res) 0) (alist-get 'op res))
      res)))

(defun vaultd--history ()
  "Every write vaultd made into the vault, newest first (vaultq history)."
  (alist-get 'history (vaultd--call "history" "--json")))

(defun vaultd--history-label (e)
  "How the history entry E is shown."
  (let ((to (alist-get 'to e)) (heading (alist-get 'heading e)))
    (format "%s  %-8s %-9s %s%s" (alist-get 'op e) (alist-get 'status e) (alist-get 'kind e) (alist-get 'note e)
            (cond ((and heading to) (format ":%s heading renamed" heading))
                  (to (format " -> %s" to))
                  ((alist-get 'parts e) (format " -> %d parts" (length (alist-get 'parts e))))
                  (t "")))))

(defun vaultd--undoable (history)
  "The entries of HISTORY that can be undone: those still done."
  (seq-filter (lambda (e) (equal (alist-get 'status e) "done")) history))

(defun vaultd--read-op (history)
  "An operation of HISTORY to undo, chosen; the newest is the default."
  (let* ((cands (mapcar (lambda (e) (cons (vaultd--history-label e) (alist-get 'op e)))
                        (or (vaultd--undoable history) (user-error "vaultd: nothing to undo")))))
    (cdr (assoc (completing-read "Undo: " cands nil t nil nil (caar cands)) cands))))

;;;###autoload
(defun vaultd-undo (&optional op)
  "Undo OP, a write of `vaultd-history'; by default the newest one still done.
Interactively with a prefix argument, choose it.  Undone byte for byte: the
files it wrote as they were, a renamed note back at its name (and its buffer
with it); refused when a file changed since.  Buffers as `vaultd-rename'."
  (interactive (list (and current-prefix-arg (vaultd--read-op (vaultd--history)))))
  (let* ((root (vaultd--root))
         (history (vaultd--history))
         (entry (if op
                    (or (seq-find (lambda (e) (equal (alist-get 'op e) op)) history)
                        (user-error "vaultd: no operation %s (see M-x vaultd-history)" op))
                  (or (car (vaultd--undoable history)) (user-error "vaultd: nothing to undo")))))
    (when (and (called-interactively-p 'interactive) (not op)
               (not (y-or-n-p (format "Undo %s? " (vaultd--history-label entry)))))
      (user-error "Not undone"))
    (vaultd--save-vault-buffers root "undoing restores notes")
    (let ((res (vaultd--write "undo" "--json" "--" (alist-get 'op entry))))
      (vaultd--after-write root (alist-get 'restored res)
                           (and (alist-get 'to entry) (cons (alist-get 'to entry) (alist-get 'note entry))))
      (message "vaultd: undid %s, %d files restored" (string-join (alist-get 'undone res) ", ")
               (length (alist-get 'restored res)))
      res)))

(defvar vaultd-history-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "u") #'vaultd-history-undo)
    map)
  "Keys of `vaultd-history': those of a vaultd list, and u to undo.")

(define-derived-mode vaultd-history-mode vaultd-list-mode "vaultd history"
  "vaultd's writes, newest first.
RET visits the note, u undoes the write, g shows them anew."
  (setq-local revert-buffer-function (lambda (&rest _) (vaultd-history))))

(defun vaultd--history-place (root e)
  "Where the history entry E lands, (FILE LINE COL).
Nil when its note is not there."
  (let* ((path (if (and (equal (alist-get 'status e) "done") (alist-get 'to e)) (alist-get 'to e)
                 (alist-get 'note e)))
         (file (and path (vaultd--file root path))))
    (and file (file-exists-p file)
         (list file (if (numberp (alist-get 'heading e)) (alist-get 'heading e) 1) 1))))

;;;###autoload
(defun vaultd-history ()
  "Show every write vaultd made into the vault, newest first.
Splits, renames, remembered entries: RET visits its note, u undoes the one
on the line."
  (interactive)
  (let* ((root (vaultd--root))
         (places (mapcar (lambda (e)
                           (cons (propertize (vaultd--history-label e) 'vaultd-op (alist-get 'op e))
                                 (vaultd--history-place root e)))
                         (vaultd--history)))
         (buf (vaultd--fill-list "*vaultd history*" (format "vaultd history of %s" root) places)))
    (with-current-buffer buf
      (let ((inhibit-read-only t) (line (line-number-at-pos)))
        (vaultd-history-mode)
        (setq default-directory root)
        (goto-char (point-min))
        (forward-line (1- line))))
    (pop-to-buffer buf)))

(defun vaultd-history-undo ()
  "Undo the write on this line of `vaultd-history', and show the history anew."
  (interactive)
  (let ((op (or (get-text-property (line-beginning-position) 'vaultd-op) (user-error "No write on this line"))))
    (when (y-or-n-p (format "Undo %s? " op))
      (vaultd-undo op)
      (vaultd-history))))

(provide 'vaultd)
;;; vaultd.el ends here
