//! The per-session flush marker: a small state machine (idle → armed → nudged →
//! critical_nudged → idle in the next cycle) and the file that holds it.
//!
//! Every change goes through [`transition`], a pure function the unit tests drive with literals,
//! and is persisted by [`Lock::save`] while an exclusive lock is held: the status line, parallel
//! PreToolUse hooks and PreCompact all agree on one history, and exactly one of 64 parallel
//! hooks sees `armed` and moves it to `nudged`. Writes are atomic (temp file in the same
//! directory, fsync, rename), so a reader without the lock sees the old or the new file, never a
//! torn one.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use chrono::{DateTime, Utc};
use fs2::FileExt;
use serde::{Deserialize, Serialize};

use crate::files;
use crate::paths::Paths;
use crate::usage::Limits;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    #[default]
    Idle,
    Armed,
    Nudged,
    CriticalNudged,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Idle => "idle",
            State::Armed => "armed",
            State::Nudged => "nudged",
            State::CriticalNudged => "critical_nudged",
        }
    }
}

/// Where the newest usage figure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Statusline,
    Transcript,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Statusline => "statusline",
            Source::Transcript => "transcript",
        }
    }
}

/// The two nudges of a cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nudge {
    Normal,
    Critical,
}

/// The persisted state of one session. Token thresholds (`compact_at`, `trigger_at`,
/// `critical_at`) are token counts; `*_at` fields holding times are RFC 3339 UTC.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Marker {
    pub session_id: String,
    pub state: State,
    pub cycle: u64,
    pub tokens: Option<u64>,
    pub window: Option<u64>,
    pub compact_at: Option<u64>,
    pub trigger_at: Option<u64>,
    pub critical_at: Option<u64>,
    pub armed_at: Option<DateTime<Utc>>,
    pub nudged_at: Option<DateTime<Utc>>,
    pub updated_at: Option<DateTime<Utc>>,
    pub source: Option<Source>,
    /// When the status line last reported a usage figure (the PreToolUse fast path trusts the
    /// marker without reading the transcript while this is recent).
    pub statusline_at: Option<DateTime<Utc>>,
    /// The window size the status line last reported for this session.
    pub reported_window: Option<u64>,
    /// Compactions PreCompact has checkpointed for this session.
    pub compactions: u64,
    /// Path of the newest checkpoint.
    pub last_checkpoint: Option<String>,
    /// The newest checkpoint has not been injected by SessionStart yet.
    pub recovery_pending: bool,
    /// When the compaction gate held an auto-compaction; cleared when a compaction passes.
    /// While set, the gate never holds again.
    pub gate_held_at: Option<DateTime<Utc>>,
}

/// A usage reading, from the status line or the transcript.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// Context tokens, `None` when unknown (before the first reply, right after compaction).
    pub tokens: Option<u64>,
    pub limits: Limits,
    pub source: Source,
    /// A `compact_boundary` newer than every reply in the transcript.
    pub boundary_at: Option<DateTime<Utc>>,
    /// The window the status line reported.
    pub reported_window: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Observe(Observation),
    /// A nudge of this level was emitted.
    Nudged(Nudge),
    /// PreCompact wrote this checkpoint: a new cycle starts and a recovery is pending.
    Compacted {
        checkpoint: String,
    },
    /// SessionStart injected the pending recovery.
    Recovered,
    /// The compaction gate held an auto-compaction: the nudge is due now.
    GateHeld,
    /// Back to idle by hand.
    Reset,
}

impl Marker {
    pub fn new(session_id: &str) -> Marker {
        Marker {
            session_id: session_id.to_string(),
            ..Marker::default()
        }
    }

    /// Has this marker gone unrefreshed for longer than `stale_after`?
    pub fn is_stale(&self, now: DateTime<Utc>, stale_after: Duration) -> bool {
        let Some(updated) = self.updated_at else {
            return self.state != State::Idle;
        };
        let age = now.signed_duration_since(updated);
        age.to_std().is_ok_and(|age| age > stale_after)
    }

    /// The state to act on: a stale non-idle marker counts as idle.
    pub fn effective_state(&self, now: DateTime<Utc>, stale_after: Duration) -> State {
        if self.is_stale(now, stale_after) {
            State::Idle
        } else {
            self.state
        }
    }

    /// Did the status line report usage within `within`?
    pub fn statusline_fresh(&self, now: DateTime<Utc>, within: Duration) -> bool {
        self.statusline_at.is_some_and(|at| {
            now.signed_duration_since(at)
                .to_std()
                .map_or(true, |age| age <= within) // a time slightly ahead still counts
        })
    }

    /// The nudge this marker is waiting for, if any.
    pub fn pending_nudge(&self) -> Option<Nudge> {
        let critical = match (self.tokens, self.critical_at) {
            (Some(t), Some(c)) => t >= c,
            _ => false,
        };
        match self.state {
            State::Armed if critical => Some(Nudge::Critical),
            State::Armed => Some(Nudge::Normal),
            State::Nudged if critical => Some(Nudge::Critical),
            _ => None,
        }
    }

    fn clear_cycle(&mut self) {
        self.state = State::Idle;
        self.armed_at = None;
        self.nudged_at = None;
    }
}

/// The one place the marker changes.
pub fn transition(
    marker: &Marker,
    event: &Event,
    now: DateTime<Utc>,
    stale_after: Duration,
) -> Marker {
    let mut m = marker.clone();
    if m.is_stale(now, stale_after) {
        m.clear_cycle();
    }
    match event {
        Event::Observe(obs) => {
            let limits = obs.limits;
            if m.state != State::Idle {
                let boundary_after_arming = obs
                    .boundary_at
                    .is_some_and(|b| m.armed_at.is_none_or(|armed| b > armed));
                let dropped = obs.tokens.is_some_and(|t| limits.dropped_below(t));
                if boundary_after_arming || dropped {
                    m.clear_cycle();
                    m.cycle += 1;
                }
            }
            m.tokens = obs.tokens;
            m.window = Some(limits.window);
            m.compact_at = Some(limits.compact_at);
            m.trigger_at = Some(limits.trigger_at);
            m.critical_at = limits.critical_at;
            if m.state == State::Idle && obs.tokens.is_some_and(|t| t >= limits.trigger_at) {
                m.state = State::Armed;
                m.armed_at = Some(now);
            }
            if obs.source == Source::Statusline && obs.tokens.is_some() {
                m.statusline_at = Some(now);
            }
            if obs.reported_window.is_some() {
                m.reported_window = obs.reported_window;
            }
            m.source = Some(obs.source);
        }
        Event::Nudged(level) => {
            m.state = match level {
                Nudge::Normal => State::Nudged,
                Nudge::Critical => State::CriticalNudged,
            };
            m.nudged_at = Some(now);
        }
        Event::Compacted { checkpoint } => {
            m.clear_cycle();
            m.cycle += 1;
            m.tokens = None;
            m.compactions += 1;
            m.last_checkpoint = Some(checkpoint.clone());
            m.recovery_pending = true;
            m.gate_held_at = None;
        }
        Event::GateHeld => {
            m.gate_held_at = Some(now);
            if m.state == State::Idle {
                m.state = State::Armed;
                m.armed_at = Some(now);
            }
        }
        Event::Recovered => m.recovery_pending = false,
        Event::Reset => m.clear_cycle(),
    }
    m.updated_at = Some(now);
    m
}

/// Does `new` differ from `old` enough to be written? Timestamps alone are refreshed at most
/// every `refresh` (the status line redraws many times a second; each write is an fsync).
pub fn worth_saving(old: &Marker, new: &Marker, refresh: Duration) -> bool {
    let strip = |m: &Marker| Marker {
        updated_at: None,
        statusline_at: None,
        ..m.clone()
    };
    if strip(old) != strip(new) {
        return true;
    }
    let aged = |a: Option<DateTime<Utc>>, b: Option<DateTime<Utc>>| match (a, b) {
        (Some(a), Some(b)) => b.signed_duration_since(a).to_std().unwrap_or_default() >= refresh,
        (None, Some(_)) => true,
        _ => false,
    };
    aged(old.updated_at, new.updated_at) || aged(old.statusline_at, new.statusline_at)
}

/// The files of one session: `marker.json` and its `lock`.
#[derive(Debug, Clone)]
pub struct Store {
    /// The state root, under which every directory is checked before use.
    root: PathBuf,
    dir: PathBuf,
}

/// How long a hook waits for another process's lock before giving up (fail open).
pub const LOCK_WAIT: Duration = Duration::from_secs(2);

impl Store {
    pub fn new(paths: &Paths, session_id: &str) -> Store {
        Store {
            root: paths.root().to_path_buf(),
            dir: paths.session_dir(session_id),
        }
    }

    pub fn in_dir(root: PathBuf, dir: PathBuf) -> Store {
        Store { root, dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn marker_path(&self) -> PathBuf {
        self.dir.join("marker.json")
    }

    fn lock_path(&self) -> PathBuf {
        self.dir.join("lock")
    }

    /// Reads the marker without locking (safe: writes are atomic renames). `Ok(None)` when the
    /// session has no marker yet.
    pub fn peek(&self) -> Result<Option<Marker>> {
        read_marker(&self.marker_path())
    }

    /// Takes the session's exclusive lock, waiting at most `wait`. The lock is advisory and
    /// held by an open file, so a crashed holder never leaves it stuck.
    pub fn lock(&self, wait: Duration) -> Result<Lock> {
        files::ensure_state_dir(&self.root, &self.dir)?;
        let path = self.lock_path();
        let file = files::open_lock(&path)?;
        let deadline = Instant::now() + wait;
        let mut pause = Duration::from_millis(1);
        loop {
            match file.try_lock_exclusive() {
                Ok(()) => {
                    return Ok(Lock {
                        _file: file,
                        store: self.clone(),
                    })
                }
                Err(e) if e.raw_os_error() == fs2::lock_contended_error().raw_os_error() => {
                    if Instant::now() >= deadline {
                        return Err(anyhow!(
                            "lock {} still held by another process after {:?}",
                            path.display(),
                            wait
                        ));
                    }
                    thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(20));
                }
                Err(e) => return Err(e).with_context(|| format!("locking {}", path.display())),
            }
        }
    }
}

/// Every session directory under the state root, with its marker (or why it could not be read),
/// most recently updated first.
pub fn all_sessions(paths: &Paths) -> Result<Vec<(Store, Result<Marker>)>> {
    let dir = paths.sessions_dir();
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("listing {}", dir.display())),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("listing {}", dir.display()))?;
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let store = Store::in_dir(paths.root().to_path_buf(), entry.path());
        match store.peek() {
            Ok(Some(marker)) => found.push((store, Ok(marker))),
            Ok(None) => {}
            Err(e) => found.push((store, Err(e))),
        }
    }
    found.sort_by(|a, b| {
        let key = |m: &Result<Marker>| m.as_ref().ok().and_then(|m| m.updated_at);
        key(&b.1).cmp(&key(&a.1))
    });
    Ok(found)
}

fn read_marker(path: &Path) -> Result<Option<Marker>> {
    match files::read_state_file(path, "marker")? {
        Some(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .with_context(|| format!("marker {} is corrupt", path.display())),
        None => Ok(None),
    }
}

/// An exclusive hold on one session's state; dropping it releases the lock.
#[derive(Debug)]
pub struct Lock {
    _file: File,
    store: Store,
}

/// A marker as loaded under the lock, with what went wrong reading it, if anything.
#[derive(Debug)]
pub struct Loaded {
    pub marker: Marker,
    /// Set when the file was corrupt or unreadable; the marker is then a fresh idle one, and
    /// the next save replaces the bad file.
    pub problem: Option<String>,
}

impl Lock {
    pub fn load(&self, session_id: &str) -> Loaded {
        match read_marker(&self.store.marker_path()) {
            Ok(Some(marker)) => Loaded {
                marker,
                problem: None,
            },
            Ok(None) => Loaded {
                marker: Marker::new(session_id),
                problem: None,
            },
            Err(e) => Loaded {
                marker: Marker::new(session_id),
                problem: Some(format!("{e:#}; starting from idle")),
            },
        }
    }

    pub fn save(&self, marker: &Marker) -> Result<()> {
        let mut bytes = serde_json::to_vec_pretty(marker).context("encoding marker")?;
        bytes.push(b'\n');
        files::write_atomic(&self.store.marker_path(), &bytes, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::Policy;
    use chrono::TimeZone;

    const STALE: Duration = Duration::from_secs(1800);

    fn t(secs: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000 + secs, 0).unwrap()
    }

    fn limits() -> Limits {
        Limits::compute(200_000, &Policy::default()) // trigger 127k, critical 152k, compact 167k
    }

    fn observe(tokens: Option<u64>) -> Event {
        Event::Observe(Observation {
            tokens,
            limits: limits(),
            source: Source::Statusline,
            boundary_at: None,
            reported_window: Some(200_000),
        })
    }

    fn run(events: &[(i64, Event)]) -> Marker {
        events.iter().fold(Marker::new("s"), |m, (at, e)| {
            transition(&m, e, t(*at), STALE)
        })
    }

    #[test]
    fn below_the_trigger_stays_idle() {
        let m = run(&[(0, observe(Some(126_999)))]);
        assert_eq!(m.state, State::Idle);
        assert_eq!(m.tokens, Some(126_999));
        assert_eq!(m.trigger_at, Some(127_000));
        assert_eq!(m.pending_nudge(), None);
        assert_eq!(m.statusline_at, Some(t(0)));
        assert_eq!(m.reported_window, Some(200_000));
    }

    #[test]
    fn full_cycle() {
        let m = run(&[(0, observe(Some(130_000)))]);
        assert_eq!((m.state, m.armed_at), (State::Armed, Some(t(0))));
        assert_eq!(m.pending_nudge(), Some(Nudge::Normal));

        let m = transition(&m, &Event::Nudged(Nudge::Normal), t(1), STALE);
        assert_eq!((m.state, m.nudged_at), (State::Nudged, Some(t(1))));
        assert_eq!(m.pending_nudge(), None);

        // Still above the trigger: no new nudge, armed_at kept.
        let m = transition(&m, &observe(Some(140_000)), t(2), STALE);
        assert_eq!((m.state, m.armed_at), (State::Nudged, Some(t(0))));

        // Critical.
        let m = transition(&m, &observe(Some(152_000)), t(3), STALE);
        assert_eq!(m.pending_nudge(), Some(Nudge::Critical));
        let m = transition(&m, &Event::Nudged(Nudge::Critical), t(4), STALE);
        assert_eq!(m.state, State::CriticalNudged);
        assert_eq!(m.pending_nudge(), None);

        // PreCompact: next cycle, usage unknown, a recovery pending.
        let compacted = Event::Compacted {
            checkpoint: "/cp_001.json".into(),
        };
        let m = transition(&m, &compacted, t(5), STALE);
        assert_eq!((m.state, m.cycle, m.tokens), (State::Idle, 1, None));
        assert_eq!((m.armed_at, m.nudged_at), (None, None));
        assert_eq!((m.compactions, m.recovery_pending), (1, true));
        assert_eq!(m.last_checkpoint.as_deref(), Some("/cp_001.json"));
        let recovered = transition(&m, &Event::Recovered, t(5), STALE);
        assert!(!recovered.recovery_pending);
        assert_eq!(recovered.state, State::Idle);

        // ... and the next cycle can arm again.
        let m = transition(&m, &observe(Some(128_000)), t(6), STALE);
        assert_eq!((m.state, m.cycle), (State::Armed, 1));
    }

    #[test]
    fn arming_past_critical_nudges_once_at_critical_level() {
        let m = run(&[(0, observe(Some(160_000)))]);
        assert_eq!(m.pending_nudge(), Some(Nudge::Critical));
        let m = transition(&m, &Event::Nudged(Nudge::Critical), t(1), STALE);
        assert_eq!(m.pending_nudge(), None);
    }

    #[test]
    fn critical_disabled_means_one_nudge() {
        let mut l = limits();
        l.critical_at = None;
        let obs = Event::Observe(Observation {
            tokens: Some(166_000),
            limits: l,
            source: Source::Transcript,
            boundary_at: None,
            reported_window: None,
        });
        let m = run(&[(0, obs.clone())]);
        assert_eq!(m.pending_nudge(), Some(Nudge::Normal));
        let m = transition(&m, &Event::Nudged(Nudge::Normal), t(1), STALE);
        let m = transition(&m, &obs, t(2), STALE);
        assert_eq!(m.pending_nudge(), None);
        assert_eq!(
            m.statusline_at, None,
            "transcript readings are not status-line reports"
        );
    }

    #[test]
    fn a_large_drop_starts_a_new_cycle() {
        let m = run(&[
            (0, observe(Some(130_000))),
            (1, Event::Nudged(Nudge::Normal)),
            // 107k is within 10% of the window below the trigger: same cycle.
            (2, observe(Some(107_000))),
        ]);
        assert_eq!((m.state, m.cycle), (State::Nudged, 0));
        let m = transition(&m, &observe(Some(2_600)), t(3), STALE);
        assert_eq!((m.state, m.cycle), (State::Idle, 1));
    }

    #[test]
    fn a_boundary_newer_than_the_arming_starts_a_new_cycle() {
        let boundary = |at: i64| {
            Event::Observe(Observation {
                tokens: None,
                limits: limits(),
                source: Source::Transcript,
                boundary_at: Some(t(at)),
                reported_window: None,
            })
        };
        let armed = run(&[
            (10, observe(Some(130_000))),
            (11, Event::Nudged(Nudge::Normal)),
        ]);
        // An old boundary (before the arming) changes nothing.
        let m = transition(&armed, &boundary(5), t(12), STALE);
        assert_eq!((m.state, m.cycle), (State::Nudged, 0));
        let m = transition(&armed, &boundary(20), t(21), STALE);
        assert_eq!((m.state, m.cycle, m.tokens), (State::Idle, 1, None));
    }

    #[test]
    fn stale_markers_count_as_idle_and_can_rearm() {
        let m = run(&[
            (0, observe(Some(130_000))),
            (1, Event::Nudged(Nudge::Normal)),
        ]);
        assert_eq!(m.effective_state(t(1 + 1800), STALE), State::Nudged);
        assert_eq!(m.effective_state(t(1 + 1801), STALE), State::Idle);
        let m = transition(&m, &observe(Some(130_000)), t(5000), STALE);
        assert_eq!(
            (m.state, m.armed_at, m.cycle),
            (State::Armed, Some(t(5000)), 0)
        );
    }

    #[test]
    fn reset_goes_idle_but_keeps_the_cycle() {
        let m = run(&[
            (0, observe(Some(130_000))),
            (
                1,
                Event::Compacted {
                    checkpoint: "x".into(),
                },
            ),
            (2, observe(Some(130_000))),
            (3, Event::Reset),
        ]);
        assert_eq!((m.state, m.cycle, m.armed_at), (State::Idle, 1, None));
    }

    #[test]
    fn only_meaningful_changes_are_worth_a_write() {
        let a = run(&[(0, observe(Some(1_000)))]);
        let same = transition(&a, &observe(Some(1_000)), t(5), STALE);
        assert!(!worth_saving(&a, &same, Duration::from_secs(15)));
        let later = transition(&a, &observe(Some(1_000)), t(15), STALE);
        assert!(worth_saving(&a, &later, Duration::from_secs(15)));
        let moved = transition(&a, &observe(Some(1_001)), t(1), STALE);
        assert!(worth_saving(&a, &moved, Duration::from_secs(15)));
    }

    #[test]
    fn store_round_trip_and_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::in_dir(dir.path().to_path_buf(), dir.path().join("s"));
        assert!(store.peek().unwrap().is_none());
        let lock = store.lock(LOCK_WAIT).unwrap();
        let m = run(&[(0, observe(Some(130_000)))]);
        lock.save(&m).unwrap();
        assert_eq!(store.peek().unwrap(), Some(m.clone()));
        assert_eq!(lock.load("s").marker, m);

        fs::write(store.marker_path(), b"{\"state\":\"arm").unwrap();
        assert!(store.peek().is_err());
        let loaded = lock.load("s");
        assert_eq!(loaded.marker.state, State::Idle);
        assert!(loaded.problem.unwrap().contains("corrupt"));
    }

    #[test]
    fn files_and_dirs_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::in_dir(dir.path().to_path_buf(), dir.path().join("a").join("s"));
        let lock = store.lock(LOCK_WAIT).unwrap();
        lock.save(&Marker::new("s")).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(store.dir()), 0o700);
        assert_eq!(mode(&dir.path().join("a")), 0o700);
        assert_eq!(mode(&store.marker_path()), 0o600);
        assert_eq!(mode(&store.lock_path()), 0o600);
    }

    #[test]
    fn a_held_lock_times_out() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::in_dir(dir.path().to_path_buf(), dir.path().join("s"));
        let _held = store.lock(LOCK_WAIT).unwrap();
        let err = store.lock(Duration::from_millis(30)).unwrap_err();
        assert!(format!("{err}").contains("still held"), "{err}");
    }
}
