;;; vaultd-test.el --- ERT tests of vaultd.el against a running daemon  -*- lexical-binding: t; -*-

;;; Commentary:

;; Run by tests/test_emacs.py: emacs --batch -Q -L editors/emacs -l vaultd-test.el
;; -f ert-run-tests-batch-and-exit, with VAULTD_SOCKET set to a daemon serving
;; $VAULTD_TEST_VAULT and $VAULTD_TEST_VAULTQ the vaultq to run.  Every place a
;; command lands on is written to $VAULTD_TEST_OUT (one JSON object a line: the
;; file, line, character column, whether point is visible, whether the buffer had
;; folded text), and the Python side checks each against the files and the daemon.

;;; Code:

(require 'ert)
(require 'json)
(require 'org)
(require 'seq)
(require 'vaultd)

(setq vaultd-vaultq-program (getenv "VAULTD_TEST_VAULTQ")
      org-startup-folded t           ; Org files open folded: a jump must reveal
      vaultd-use-consult nil)

(defvar vaultd-test-vault (file-name-as-directory (getenv "VAULTD_TEST_VAULT")))

(defun vaultd-test--record (what)
  "Write where point is, after WHAT, to $VAULTD_TEST_OUT."
  (let ((row `((what . ,what)
               (file . ,(buffer-file-name))
               (line . ,(line-number-at-pos))
               (col . ,(- (point) (line-beginning-position)))
               (visible . ,(if (invisible-p (point)) :json-false t))
               (folded . ,(if (and (derived-mode-p 'org-mode)
                                   (next-single-char-property-change (point-min) 'invisible nil (point-max))
                                   (< (next-single-char-property-change (point-min) 'invisible nil (point-max))
                                      (point-max)))
                              t :json-false))
               (text . ,(buffer-substring-no-properties (point) (min (+ (point) 12) (line-end-position)))))))
    (write-region (concat (json-encode row) "\n") nil (getenv "VAULTD_TEST_OUT") t 'silent)))

(defun vaultd-test--visit-each (buffer what)
  "Press RET on every place of the vaultd list BUFFER, recording each landing as WHAT."
  (let ((n 0))
    (with-current-buffer buffer
      (goto-char (point-min))
      (forward-line 1)
      (while (get-text-property (point) 'vaultd-loc)
        (let ((here (point)))
          (save-window-excursion
            (with-current-buffer buffer
              (goto-char here)
              (vaultd-list-visit))
            (with-current-buffer (window-buffer (selected-window))
              (vaultd-test--record what))
            (setq n (1+ n)))
          (with-current-buffer buffer
            (goto-char here)
            (forward-line 1)))))
    n))

(ert-deftest vaultd-search-lands-on-each-hit ()
  (let ((default-directory vaultd-test-vault))
    (vaultd-search "splitter")
    (should (> (vaultd-test--visit-each "*vaultd search*" "search") 4))))

(ert-deftest vaultd-search-preview-lands-too ()
  "The preview of each hit (consult's state function, as consult calls it) lands exactly."
  (let ((default-directory vaultd-test-vault)
        (state (vaultd--preview-state)))
    (cl-letf (((symbol-function 'minibuffer-selected-window) #'selected-window))
      (dolist (p (vaultd--search-places "splitter"))
        (funcall state 'preview (propertize (car p) 'vaultd-loc (cdr p)))
        (with-current-buffer (window-buffer (selected-window))
          (goto-char (window-point (selected-window)))
          (vaultd-test--record "preview"))))
    (funcall state 'exit nil)))

(ert-deftest vaultd-backlinks-land-on-each-link ()
  (let ((default-directory vaultd-test-vault))
    (vaultd-backlinks (expand-file-name "Deep work.md" vaultd-test-vault))
    (should (> (vaultd-test--visit-each "*vaultd backlinks*" "backlinks") 3))))

(ert-deftest vaultd-follow-link-lands-on-the-heading ()
  (dolist (case (split-string (getenv "VAULTD_TEST_FOLLOW") "\n" t))
    (pcase-let ((`(,file ,needle) (split-string case "\t")))
      (save-window-excursion
        (find-file (expand-file-name file vaultd-test-vault))
        (goto-char (point-min))
        (search-forward needle)
        (backward-char 1)
        (vaultd--reveal)              ; the link itself may be folded away too
        (vaultd-follow-link)
        (vaultd-test--record (concat "follow " needle))))))

;;;; Grep, links out, broken links, the place just past a link (tag `parity':
;;;; tests/test_emacs.py runs them apart)

(defun vaultd-test--finish (buffer)
  "Wait until BUFFER's process (a compilation) has ended."
  (let ((proc (get-buffer-process buffer)))
    (while (and proc (process-live-p proc))
      (accept-process-output proc 0.1))))

(defun vaultd-test--next-each (buffer what)
  "Visit every match of the compilation BUFFER as RET does, recording each as WHAT."
  (let ((n 0) (here (with-current-buffer buffer (point-min))))
    (while (setq here (with-current-buffer buffer
                        (goto-char here)
                        (condition-case nil
                            (progn (compilation-next-error 1) (point))
                          (error nil))))
      (save-window-excursion
        (with-current-buffer buffer
          (goto-char here)
          (compile-goto-error))
        (with-current-buffer (window-buffer (selected-window))
          (vaultd-test--record what)))
      (setq n (1+ n)))
    n))

(defun vaultd-test--record-lines (buffer what)
  "Write each line of BUFFER after its first (its header) to $VAULTD_TEST_OUT as WHAT."
  (with-current-buffer buffer
    (dolist (line (cdr (split-string (buffer-substring-no-properties (point-min) (point-max)) "\n" t)))
      (write-region (concat (json-encode `((what . ,what) (text . ,line))) "\n") nil
                    (getenv "VAULTD_TEST_OUT") t 'silent))))

(ert-deftest vaultd-grep-buffer-lands-on-each-match ()
  "Without consult: a `vaultd-grep-mode' buffer, each match landed on as RET does."
  :tags '(parity)
  (let* ((default-directory vaultd-test-vault)
         (buf (vaultd-grep "splitter")))
    (vaultd-test--finish buf)
    (should (eq (buffer-local-value 'major-mode buf) 'vaultd-grep-mode))
    (should (> (vaultd-test--next-each buf "grep") 4))))

(defun vaultd-test--consult ()
  "consult, when installed: a package of the user's, or Debian's elpa-consult (which
-Q leaves out of the `load-path')."
  (or (require 'consult nil t)
      (progn
        (require 'package)
        (let ((package-directory-list (cons "/usr/share/emacs/site-lisp/elpa" package-directory-list)))
          (package-initialize t)
          (and (assq 'consult package-alist)
               (package-activate 'consult)
               (require 'consult nil t))))))

(defun vaultd-test--consult-candidates (input)
  "The candidates consult makes of vaultq's rows for INPUT, through consult's own
formatting (`consult--grep-format', its form of 0.32 to 1.x and of 2.x)."
  (let* ((built (vaultd--consult-grep-builder input))
         (cands nil)
         (sink (lambda (action) (when (consp action) (setq cands action))))
         (fmt (if (equal (func-arity 'consult--grep-format) '(2 . 2))
                  (consult--grep-format sink #'vaultd--consult-grep-builder)
                (funcall (consult--grep-format #'vaultd--consult-grep-builder) sink)))
         (rows (with-temp-buffer
                 (let ((coding-system-for-read 'utf-8))
                   (apply #'process-file (car (car built)) nil t nil (cdr (car built))))
                 (split-string (buffer-string) "\n" t))))
    (funcall fmt input)
    (funcall fmt rows)
    cands))

(ert-deftest vaultd-grep-through-consult-lands-on-each-match ()
  "With consult: vaultq's rows as consult reads them, each landed on by consult's own
`consult--grep-position' (the consult of this machine: skipped without one)."
  :tags '(parity)
  (skip-unless (vaultd-test--consult))
  (let ((default-directory vaultd-test-vault) (n 0))
    (dolist (cand (vaultd-test--consult-candidates "splitter"))
      (let ((pos (car (consult--grep-position cand #'find-file-noselect))))
        (with-current-buffer (marker-buffer pos)
          (goto-char pos)
          (vaultd--reveal)
          (vaultd-test--record "consult")
          (setq n (1+ n)))))
    (should (> n 4))
    (should (null (vaultd-test--consult-candidates "zzzqx")))
    (should (< (length (vaultd-test--consult-candidates "splitter -- -s"))
               (length (vaultd-test--consult-candidates "splitter"))))))

(ert-deftest vaultd-links-land-on-each-link-out ()
  :tags '(parity)
  (let ((default-directory vaultd-test-vault))
    (vaultd-links (expand-file-name (getenv "VAULTD_TEST_LINKS") vaultd-test-vault))
    (vaultd-test--record-lines "*vaultd links*" "links label")
    (should (> (vaultd-test--visit-each "*vaultd links*" "links") 1))))

(ert-deftest vaultd-broken-links-land-on-each-link ()
  :tags '(parity)
  (let ((default-directory vaultd-test-vault))
    (vaultd-broken-links)
    (vaultd-test--record-lines "*vaultd broken links*" "broken label")
    (should (> (vaultd-test--visit-each "*vaultd broken links*" "broken") 0))))

(ert-deftest vaultd-follow-link-just-past-a-link-is-not-on-it ()
  "On a line of emoji with U+FE0F: just past `]]' no link is followed; on its last `]'
and its first `[' it is."
  :tags '(parity)
  (save-window-excursion
    (find-file (expand-file-name (getenv "VAULTD_TEST_EMOJI") vaultd-test-vault))
    (goto-char (point-min))
    (search-forward "]]")
    (let ((err (should-error (vaultd-follow-link) :type 'user-error)))
      (vaultd-test--record (concat "past: " (error-message-string err))))
    (backward-char 1)
    (save-window-excursion
      (vaultd-follow-link)
      (vaultd-test--record "follow last ]"))
    (search-backward "[[")
    (vaultd-follow-link)
    (vaultd-test--record "follow first [")))

;;;; Rename, history, undo (tag `rename': tests/test_emacs.py runs them apart and checks
;;;; the files written against the rows recorded here)

(defun vaultd-test--tree ()
  "The vault's files (but vaultd's journal in .vaultd/, and Emacs's lock links),
each path with its text."
  (let ((files (seq-remove (lambda (f) (string-prefix-p ".vaultd/" f))
                           (mapcar (lambda (f) (file-relative-name f vaultd-test-vault))
                                   (seq-filter #'file-regular-p
                                               (directory-files-recursively vaultd-test-vault ""))))))
    (mapcar (lambda (f)
              (cons f (with-temp-buffer
                        (let ((coding-system-for-read 'utf-8))
                          (insert-file-contents (expand-file-name f vaultd-test-vault)))
                        (buffer-string))))
            (sort files #'string<))))

(defun vaultd-test--record-state (what)
  "Write the vault's files, and each buffer of them (its file, whether it is modified
and says what its file says), after WHAT, to $VAULTD_TEST_OUT."
  (let ((buffers nil))
    (dolist (b (buffer-list))
      (let ((file (buffer-file-name b)))
        (when (and file (file-in-directory-p file vaultd-test-vault))
          (push `((file . ,(file-relative-name file vaultd-test-vault))
                  (modified . ,(if (buffer-modified-p b) t :json-false))
                  (same . ,(if (and (file-exists-p file)
                                    (equal (with-current-buffer b
                                             (save-restriction (widen) (buffer-string)))
                                           (cdr (assoc (file-relative-name file vaultd-test-vault)
                                                       (vaultd-test--tree)))))
                               t :json-false)))
                buffers))))
    (write-region (concat (json-encode `((what . ,what)
                                         (current . ,(and (buffer-file-name)
                                                          (file-relative-name (buffer-file-name)
                                                                              vaultd-test-vault)))
                                         (tree . ,(vaultd-test--tree))
                                         (buffers . ,(nreverse buffers))))
                          "\n")
                  nil (getenv "VAULTD_TEST_OUT") t 'silent)))

(defun vaultd-test--rename-here (title &optional heading)
  "`vaultd-rename' as M-x runs it here, answering TITLE; HEADING: yes, the heading.
The default it offered is recorded."
  (cl-letf (((symbol-function 'read-string)
             (lambda (prompt &optional _initial _history default &rest _)
               (write-region (concat (json-encode `((what . "offered") (prompt . ,prompt) (default . ,default)))
                                     "\n")
                             nil (getenv "VAULTD_TEST_OUT") t 'silent)
               title))
            ((symbol-function 'y-or-n-p) (lambda (&rest _) heading)))
    (call-interactively #'vaultd-rename)))

(ert-deftest vaultd-rename-from-a-link-then-the-note-then-a-heading-then-undo ()
  "A modified buffer refuses; saved, the note a link leads to is renamed (the links in
other notes rewritten, their buffers reverted, the note's buffer at its new name); then
the current buffer's note, then a heading; `vaultd-history' lists the three and
`vaultd-undo' undoes each, newest first."
  :tags '(rename)
  (let* ((vaultd-save-before-write nil)
         (part (find-file (expand-file-name (getenv "VAULTD_TEST_PART") vaultd-test-vault)))
         (deep (find-file-noselect (expand-file-name "Deep work.md" vaultd-test-vault))))
    (with-current-buffer part
      (goto-char (point-max))
      (insert (getenv "VAULTD_TEST_ADDED"))
      (search-backward "[[Deep work#Rules]]")
      (forward-char 4)
      (let ((err (should-error (vaultd-test--rename-here "Shallow work") :type 'user-error)))
        (vaultd-test--record-state (concat "refused: " (error-message-string err))))
      (setq vaultd-save-before-write t)
      (vaultd-test--rename-here "Shallow work")
      (vaultd-test--record-state "from a link"))
    (switch-to-buffer deep)
    (goto-char (point-min))
    (vaultd-test--rename-here "Deep focus")
    (vaultd-test--record-state "this note")
    (goto-char (point-min))
    (search-forward "## Rules")
    (vaultd-test--rename-here "Principles" t)
    (vaultd-test--record-state "a heading")
    (vaultd-history)
    (vaultd-test--record-lines "*vaultd history*" "history")
    (dotimes (i 3)
      (with-current-buffer deep
        (vaultd-undo)
        (vaultd-test--record-state (format "undo %d" (1+ i)))))
    (should-error (vaultd-undo) :type 'user-error)))

(provide 'vaultd-test)
;;; vaultd-test.el ends here
