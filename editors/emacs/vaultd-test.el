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
               (visible . ,(if (invisible-p (point)) :false t))
               (folded . ,(if (and (derived-mode-p 'org-mode)
                                   (next-single-char-property-change (point-min) 'invisible nil (point-max))
                                   (< (next-single-char-property-change (point-min) 'invisible nil (point-max))
                                      (point-max)))
                              t :false))
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

(provide 'vaultd-test)
;;; vaultd-test.el ends here
