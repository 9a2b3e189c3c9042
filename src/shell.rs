//! Shell words: quoting a word as install writes it, and reading a command line back the way
//! `sh` splits it, so that what install wrapped comes back byte for byte. The reader follows
//! POSIX token recognition for everything that can be known without running anything: blanks
//! (space and tab only), `'...'`, `"..."` (where `\` escapes only `$`, `` ` ``, `"`, `\` and a
//! newline, and is kept before anything else), `\` outside quotes, and line continuations.
//! Parameters (`$HOME`, `${X}`), `~`, glob and brace characters are kept as written and mark
//! the word as not literal (the shell would change it); whatever would need running (`$(...)`,
//! backquotes, `$'...'`, operators such as `;`, `|` or `>`) or an unbalanced quote ends the
//! reading, and the line is marked as having a rest that cannot be read.

use std::iter::Peekable;
use std::ops::Range;
use std::str::CharIndices;

/// Bytes that need no quoting in `sh` or `bash` wherever a word stands.
const PLAIN: &[u8] = b"/._-+:,@%";

/// The lines of a shell command that can run something, each with its byte offset in `command`
/// and its text with quotes blanked ([`blank_quotes`]; same length): the body of a
/// here-document is text, not commands, and is left out (the line that opens it is kept).
pub fn command_lines(command: &str) -> Vec<(usize, String)> {
    let blanked = blank_quotes(command);
    let mut out = Vec::new();
    let mut at = 0;
    let mut heredoc: Option<String> = None;
    for (line, plain) in command
        .split_inclusive('\n')
        .zip(blanked.split_inclusive('\n'))
    {
        let start = at;
        at += line.len();
        let body = line.trim_end_matches(['\n', '\r']);
        if let Some(end) = &heredoc {
            if body.trim() == end {
                heredoc = None;
            }
            continue;
        }
        heredoc = heredoc_end(body);
        out.push((start, plain.trim_end_matches(['\n', '\r']).to_string()));
    }
    out
}

/// The word that ends a here-document this line opens (`<<EOF`, `<<'EOF'`, `<<-"END"`).
fn heredoc_end(line: &str) -> Option<String> {
    let (_, rest) = line.split_once("<<")?;
    let rest = rest.trim_start_matches('-').trim_start();
    if rest.starts_with('<') {
        return None; // a here-string (`<<<`)
    }
    let word: String = rest
        .trim_start_matches(['\'', '"'])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!word.is_empty()).then_some(word)
}

/// `command` with the text inside its quotes (`'…'`, `"…"`, across lines too) blanked byte for
/// byte, so offsets stay the same: what a quoted string says (a commit message naming `cargo
/// test`, `echo "a; b"`) is no command, and its `;` or `|` splits nothing. The string after
/// a shell's `-c` (`sh -c "npm test"`) is a command and is kept; another program's (`python3 -c
/// "…"`) is that program's code, blanked. An unbalanced quote blanks the rest. A
/// here-document's body is blanked whole, quotes or not, up to its terminator.
/// Programs whose `-c` string is a shell command line.
const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "fish", "su"];

fn blank_quotes(command: &str) -> String {
    let bytes = command.as_bytes();
    let mut out = bytes.to_vec();
    let mut i = 0;
    let mut line_start = 0;
    while i < bytes.len() {
        let q = bytes[i];
        if q == b'\n' {
            // A here-document the line opened (its `<<` outside quotes) is text up to its
            // terminator: an apostrophe in it opens no quote over the commands after it.
            let opened = std::str::from_utf8(&out[line_start..i])
                .ok()
                .and_then(|plain| plain.find("<<"))
                .and_then(|at| heredoc_end(&command[line_start + at..i]));
            i += 1;
            if let Some(end) = opened {
                while i < bytes.len() {
                    let eol = command[i..].find('\n').map_or(bytes.len(), |n| i + n);
                    let last = command[i..eol].trim() == end;
                    if !last {
                        out[i..eol].fill(b' ');
                    }
                    i = (eol + 1).min(bytes.len());
                    if last {
                        break;
                    }
                }
            }
            line_start = i;
            continue;
        }
        if q != b'\'' && q != b'"' {
            i += 1;
            continue;
        }
        let after_c = command[..i]
            .trim_end()
            .strip_suffix(" -c")
            .and_then(|before| before.split_whitespace().last())
            .is_some_and(|program| SHELLS.contains(&program.rsplit('/').next().unwrap_or("")));
        let mut j = i + 1;
        while j < bytes.len() && bytes[j] != q {
            j += usize::from(q == b'"' && bytes[j] == b'\\');
            j += 1;
        }
        if !after_c {
            for b in out.iter_mut().take(j.min(bytes.len())).skip(i + 1) {
                if *b != b'\n' {
                    *b = b' ';
                }
            }
        }
        i = j + 1;
    }
    // Only ASCII bytes were replaced, each whole character inside the quotes: still UTF-8.
    String::from_utf8(out).unwrap_or_else(|_| command.to_string())
}

/// Quotes a word for `sh` (single quotes; a quote inside becomes `'\''`), unless it is plain.
pub fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || PLAIN.contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// One word of a command line, with its quotes removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    pub text: String,
    /// The shell passes exactly `text`: no parameter, tilde, glob or brace expansion is involved.
    pub literal: bool,
    /// Where the word is in the line, in bytes.
    pub span: Range<usize>,
}

/// A command line read as far as it can be without running anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub words: Vec<Word>,
    /// Something follows `words` that cannot be read (an operator, a command substitution, an
    /// unbalanced quote): the line is more than these words.
    pub rest: bool,
}

/// Splits a command line into words the way `sh` does; see the module comment for what is
/// read and what ends the reading.
pub fn lex(line: &str) -> Line {
    let mut lexer = Lexer {
        line,
        chars: line.char_indices().peekable(),
        words: Vec::new(),
        word: None,
    };
    let rest = lexer.run().is_none();
    Line {
        words: lexer.words,
        rest,
    }
}

/// The words `sh` would pass for this command line, when they can be known without running
/// anything: `None` for unbalanced quotes, any expansion (`$X`, `~`, globs, `$(...)`), an
/// operator, or a first word that is a reserved word or an assignment.
pub fn shell_words(line: &str) -> Option<Vec<String>> {
    let lexed = lex(line);
    if lexed.rest || lexed.words.iter().any(|w| !w.literal) {
        return None;
    }
    if let Some(first) = lexed.words.first() {
        let raw = &line[first.span.clone()];
        if raw == first.text && (is_reserved(raw) || is_assignment(raw)) {
            return None;
        }
    }
    Some(lexed.words.into_iter().map(|w| w.text).collect())
}

fn is_reserved(word: &str) -> bool {
    matches!(
        word,
        "!" | "{"
            | "}"
            | "case"
            | "do"
            | "done"
            | "elif"
            | "else"
            | "esac"
            | "fi"
            | "for"
            | "if"
            | "in"
            | "then"
            | "until"
            | "while"
            | "[["
            | "function"
            | "select"
    )
}

fn is_assignment(word: &str) -> bool {
    let Some((name, _)) = word.split_once('=') else {
        return false;
    };
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

struct Lexer<'a> {
    line: &'a str,
    chars: Peekable<CharIndices<'a>>,
    words: Vec<Word>,
    /// The word being read, if one has started.
    word: Option<Word>,
}

impl Lexer<'_> {
    /// Reads every word; `None` when it stopped at something it cannot read.
    fn run(&mut self) -> Option<()> {
        while let Some((i, c)) = self.chars.next() {
            match c {
                ' ' | '\t' => self.finish(),
                '\n' => {
                    // A newline ends the command: fine at the end, a second command otherwise.
                    self.finish();
                    return self.line[i..]
                        .trim_matches(['\n', ' ', '\t'])
                        .is_empty()
                        .then_some(());
                }
                '#' if self.word.is_none() => {
                    // A comment: sh ignores the rest of the line (a newline would start a new
                    // command, which is more than these words).
                    return (!self.line[i..].contains('\n')).then_some(());
                }
                // An operator ends the word before it (a redirection's `2` in `2>` is not a
                // word); a backquote starts a command substitution inside the word.
                '|' | '&' | ';' | '(' | ')' => {
                    self.finish();
                    return None;
                }
                '<' | '>' | '`' => return None,
                '\'' => {
                    self.start(i);
                    loop {
                        let (j, ch) = self.chars.next()?;
                        if ch == '\'' {
                            self.extend(j + 1);
                            break;
                        }
                        self.push(ch, j);
                    }
                }
                '"' => {
                    self.start(i);
                    self.double_quoted()?;
                }
                '\\' => match self.chars.next() {
                    // A line continuation: both characters go, and no word starts.
                    Some((j, '\n')) => self.extend(j + 1),
                    Some((j, ch)) => {
                        self.start(i);
                        self.push(ch, j);
                    }
                    // A trailing backslash stays (as in dash and bash).
                    None => {
                        self.start(i);
                        self.push('\\', i);
                    }
                },
                '$' => {
                    self.start(i);
                    self.dollar(i, false)?;
                }
                '~' | '*' | '?' | '[' | '{' => {
                    self.start(i);
                    self.push(c, i);
                    self.not_literal();
                }
                c => {
                    self.start(i);
                    self.push(c, i);
                }
            }
        }
        self.finish();
        Some(())
    }

    /// After an opening `"`: up to the closing one.
    fn double_quoted(&mut self) -> Option<()> {
        loop {
            let (j, ch) = self.chars.next()?;
            match ch {
                '"' => {
                    self.extend(j + 1);
                    return Some(());
                }
                '\\' => {
                    let (k, next) = self.chars.next()?;
                    match next {
                        '\n' => self.extend(k + 1),
                        '$' | '`' | '"' | '\\' => self.push(next, k),
                        _ => {
                            self.push('\\', j);
                            self.push(next, k);
                        }
                    }
                }
                '$' => self.dollar(j, true)?,
                '`' => return None,
                _ => self.push(ch, j),
            }
        }
    }

    /// After a `$` at byte `at`: a parameter is kept as written (not literal); a command
    /// substitution, arithmetic, or a quote right after it (`$'..'`, `$".."`, which bash reads
    /// differently from sh) cannot be read; anything else leaves the `$` as it is.
    fn dollar(&mut self, at: usize, quoted: bool) -> Option<()> {
        self.push('$', at);
        let Some(&(j, next)) = self.chars.peek() else {
            return Some(());
        };
        match next {
            '(' => return None,
            '\'' | '"' if !quoted => return None,
            '{' => {
                self.not_literal();
                let mut depth = 0usize;
                loop {
                    let (k, ch) = self.chars.next()?;
                    self.push(ch, k);
                    match ch {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                }
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                self.not_literal();
                while let Some(&(k, ch)) = self.chars.peek() {
                    if !(ch.is_ascii_alphanumeric() || ch == '_') {
                        break;
                    }
                    self.push(ch, k);
                    self.chars.next();
                }
            }
            c if c.is_ascii_digit() || "@*#?-$!".contains(c) => {
                self.not_literal();
                self.push(c, j);
                self.chars.next();
            }
            _ => {}
        }
        Some(())
    }

    fn start(&mut self, at: usize) {
        self.word.get_or_insert(Word {
            text: String::new(),
            literal: true,
            span: at..at,
        });
    }

    /// Adds a character (at byte `at` of the line) to the current word.
    fn push(&mut self, c: char, at: usize) {
        if let Some(w) = &mut self.word {
            w.text.push(c);
        }
        self.extend(at + c.len_utf8());
    }

    fn extend(&mut self, end: usize) {
        if let Some(w) = &mut self.word {
            w.span.end = w.span.end.max(end);
        }
    }

    fn not_literal(&mut self) {
        if let Some(w) = &mut self.word {
            w.literal = false;
        }
    }

    fn finish(&mut self) {
        if let Some(w) = self.word.take() {
            self.words.push(w);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(unix)]
    use std::process::Command;

    #[test]
    fn an_apostrophe_in_a_here_document_hides_no_command_after_it() {
        let command = "cat >> NOTES.md <<'EOF'\nthe exporter's header\nEOF\npytest -q";
        let lines: Vec<String> = command_lines(command).into_iter().map(|(_, l)| l).collect();
        assert_eq!(lines, ["cat >> NOTES.md <<'   '", "pytest -q"]);
        // Blanked byte for byte: offsets stay those of the command.
        assert_eq!(blank_quotes(command).len(), command.len());
        assert!(blank_quotes("echo \"<<EOF\"\nnpm test").ends_with("npm test"));
    }

    #[test]
    fn a_shells_c_string_is_commands_another_programs_is_its_code() {
        assert_eq!(blank_quotes("sh -c 'npm test'"), "sh -c 'npm test'");
        assert_eq!(
            blank_quotes("/bin/bash -c \"a; b\""),
            "/bin/bash -c \"a; b\""
        );
        assert_eq!(
            blank_quotes("lint | python3 -c \"\nimport x; x\n\""),
            "lint | python3 -c \"\n           \n\""
        );
    }

    /// The words the real `/bin/sh` passes for `line`, or `None` if it fails to run it.
    #[cfg(unix)]
    fn sh_words(line: &str) -> Option<Vec<String>> {
        let out = Command::new("/bin/sh")
            .arg("-c")
            .arg(format!("printf '%s\\0' {line}"))
            .env("HOME", "/nonexistent-home")
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        let text = String::from_utf8(out.stdout).ok()?;
        let mut words: Vec<String> = text.split('\0').map(str::to_string).collect();
        assert_eq!(words.pop().as_deref(), Some(""), "{line}: {text:?}");
        Some(words)
    }

    /// Commands a user may have as a status line, each quoted as install quotes it and read
    /// back as uninstall reads it, against what the real `sh` makes of the same text.
    #[cfg(unix)]
    #[test]
    fn install_quoting_round_trips_through_the_real_sh() {
        let table = [
            "plain",
            "printf '%s\\n' x",
            "printf \"%s\\n\" \"$HOME\"",
            "echo \"it's\" 'a \"b\"'",
            "",
            " ",
            "$(rm -rf /)",
            "`id`",
            "a\\b\\\\c\\",
            "line one\nline two\n",
            "tab\there",
            "~/.claude/statusline.sh --fancy 'z'",
            "'",
            "''",
            "\"\"",
            "\\'",
            "a;b|c&d>e<f(g)",
            "*?[a]{b,c}",
            "$'\\t' $\"x\"",
            "ünïcödé ✓",
            "\r\u{b}\u{c}",
            "%s=1 a=b -x --y=z",
        ];
        for cmd in table {
            let line = format!("ctxguard statusline --then {}", shell_quote(cmd));
            let ours = shell_words(&line).unwrap_or_else(|| panic!("{line}"));
            assert_eq!(ours, ["ctxguard", "statusline", "--then", cmd], "{line}");
            assert_eq!(sh_words(&line), Some(ours), "{line}");
            // And as a word on its own.
            assert_eq!(sh_words(&shell_quote(cmd)), Some(vec![cmd.to_string()]));
        }
    }

    /// Lines written by hand: wherever our reader claims to know the words, `sh` agrees.
    #[cfg(unix)]
    #[test]
    fn hand_written_lines_split_as_sh_splits_them() {
        let table = [
            r#"ctxguard statusline --then "printf '%s\n' x""#,
            r#"a "b c" d\ e 'f'"#,
            r#""a\$b" "a\`b" "a\"b" "a\\b" "a\nb" "a\b""#,
            "a\\\nb \"c\\\nd\" 'e\\\nf'",
            "a\\",
            "  lead  trail  ",
            "a\tb",
            "x # comment",
            "x#y",
            "\"\" '' x",
            "a$ \"$\" \"a$\" $. $/",
            "a\rb",
            "x\n",
            "'it'\\''s'",
        ];
        for line in table {
            let ours = shell_words(line).unwrap_or_else(|| panic!("{line:?}"));
            assert_eq!(sh_words(line), Some(ours), "{line:?}");
        }
        assert_eq!(
            shell_words(r#"ctxguard statusline --then "printf '%s\n' x""#).unwrap()[3],
            r"printf '%s\n' x"
        );
    }

    #[test]
    fn what_cannot_be_known_is_not_claimed() {
        for line in [
            "a 'open",
            "a \"open",
            "echo $HOME",
            "echo \"$HOME\"",
            "echo ${X:-y}",
            "echo ~/x",
            "echo $(id)",
            "echo \"$(id)\"",
            "echo `id`",
            "echo *",
            "a; b",
            "a | b",
            "a > f",
            "a\nb",
            "X=1 a",
            "if x",
            "echo $'x'",
            "echo {a,b}",
        ] {
            assert_eq!(shell_words(line), None, "{line:?}");
        }
    }

    #[test]
    fn words_know_where_they_are_and_whether_they_are_literal() {
        let line = r#"  "$HOME/bin/ctxguard" statusline --then 'a b'; rm x"#;
        let lexed = lex(line);
        assert!(lexed.rest);
        let texts: Vec<&str> = lexed.words.iter().map(|w| w.text.as_str()).collect();
        assert_eq!(texts, ["$HOME/bin/ctxguard", "statusline", "--then", "a b"]);
        assert!(!lexed.words[0].literal && lexed.words[1].literal);
        assert_eq!(
            &line[lexed.words[0].span.clone()],
            r#""$HOME/bin/ctxguard""#
        );
        assert_eq!(&line[lexed.words[3].span.clone()], "'a b'");
        let cut = lex("ctxguard statusline --then \"$(cat x)\"");
        assert!(cut.rest);
        assert_eq!(cut.words.len(), 3);
    }
}
