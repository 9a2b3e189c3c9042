//! Notes collected while a hook runs, printed as a single stderr line at the end: a hook says
//! what went wrong without ever failing the session it serves.
//!
//! A file from outside ctxguard's state refused deep below a hook (a client settings file that
//! is a FIFO, a task file too large), where no [`Diag`] is at hand, is noted with [`refused`];
//! the hook's guard adds those notes to its line, and a manual command prints them after its
//! output. Per thread, so hooks run in-process by the tests never see each other's.

use std::cell::RefCell;

/// The notes of one hook run.
#[derive(Debug, Default)]
pub struct Diag {
    notes: Vec<String>,
}

impl Diag {
    pub fn note(&mut self, message: impl Into<String>) {
        self.notes.push(message.into());
    }

    /// Puts `message` first (a blocking hook's reason is what Claude Code shows).
    pub fn note_first(&mut self, message: String) {
        self.notes.insert(0, message);
    }

    /// `ctxguard HOOK: note; note`, on one line, or `None` without notes.
    pub fn line(&self, hook: &str) -> Option<String> {
        (!self.notes.is_empty())
            .then(|| one_line(&format!("ctxguard {hook}: {}", self.notes.join("; "))))
    }
}

/// Control characters (newlines included) become spaces, so a message stays one line.
pub fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// Writes one line to stderr, ignoring failure: a hook whose stderr is closed must still exit 0
/// (`eprintln!` would panic, and a panic while reporting a panic aborts).
pub fn to_stderr(line: &str) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(line.as_bytes());
    let _ = err.write_all(b"\n");
}

/// At most this many refusals are kept for one run (each is said once).
const MAX_REFUSED: usize = 8;

/// A refusal note is cut to this many characters (a path may be long).
const REFUSED_CHARS: usize = 300;

thread_local! {
    static REFUSED: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// Notes that a file from outside ctxguard's state was refused (`message` names it and says
/// why): said once per run, however often it is read.
pub fn refused(message: &str) {
    let message = crate::text::cut(&one_line(message), REFUSED_CHARS);
    REFUSED.with(|notes| {
        let mut notes = notes.borrow_mut();
        if notes.len() < MAX_REFUSED && !notes.contains(&message) {
            notes.push(message);
        }
    });
}

/// The refusals noted on this thread since the last call, oldest first.
pub fn take_refused() -> Vec<String> {
    REFUSED.with(|notes| std::mem::take(&mut *notes.borrow_mut()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_said_once_bounded_and_taken_once() {
        assert!(take_refused().is_empty());
        refused("settings /p/.claude/settings.json is not a regular file (a FIFO)");
        refused("settings /p/.claude/settings.json is not a regular file (a FIFO)");
        refused(&format!("task {}\n", "x".repeat(1000)));
        for n in 0..20 {
            refused(&format!("note {n}"));
        }
        let notes = take_refused();
        assert_eq!(notes.len(), MAX_REFUSED, "{notes:?}");
        assert_eq!(
            notes[0],
            "settings /p/.claude/settings.json is not a regular file (a FIFO)"
        );
        assert!(notes[1].chars().count() <= REFUSED_CHARS && !notes[1].contains('\n'));
        assert!(take_refused().is_empty());
    }
}
