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
(require 'subr-x)

(declare-function org-reveal "org" (&optional siblings))
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

(defcustom vaultd-use-consult t
  "Use consult for live search with preview when it is installed."
  :type 'boolean)

;;;; vaultq

(defun vaultd--call (&rest args)
  "Run vaultq with ARGS; return its JSON answer (an alist), nil for no result.
A daemon that is down, or a bad request, is a `user-error' in vaultq's words."
  (let ((err (make-temp-file "vaultd-err")))
    (unwind-protect
        (with-temp-buffer
          (let* ((coding-system-for-read 'utf-8)
                 (coding-system-for-write 'utf-8)
                 (code (apply #'call-process vaultd-vaultq-program nil (list t err) nil
                              (append vaultd-vaultq-args args))))
            (cond
             ((and (memq code '(0 1)) (> (buffer-size) 0))
              (goto-char (point-min))
              (json-parse-buffer :object-type 'alist :array-type 'list :null-object nil :false-object nil))
             ((eq code 1) nil)
             (t (user-error "vaultd: %s"
                            (string-trim (with-temp-buffer
                                           (insert-file-contents err)
                                           (buffer-string))))))))
      (delete-file err))))

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

(provide 'vaultd)
;;; vaultd.el ends here
