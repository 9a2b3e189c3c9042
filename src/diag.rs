//! Notes collected while a hook runs, printed as a single stderr line at the end: a hook says
//! what went wrong without ever failing the session it serves.

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
