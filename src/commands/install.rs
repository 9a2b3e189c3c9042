//! `ctxguard install` and `uninstall`: register ctxguard in Claude Code's settings.json, or take
//! it out again, without ever damaging the file: an unparsable file is refused and left as it is,
//! every change is preceded by a backup, and the new file replaces the old atomically with the
//! same permissions. The edits themselves are in `crate::settings`. The file is written back as
//! 2-space JSON (as Claude Code writes it): every key and value is kept in its order, but custom
//! whitespace is not; the backup keeps the original byte for byte, and `uninstall` writes that
//! original back as it was when nothing else in the file changed since.
//!
//! Backups (`settings.json.ctxguard-backup-<date>-<time to the microsecond>`, `-1`, `-2`... when
//! that name is taken) are never overwritten, never written through a symlink, and have the
//! settings' permissions from the moment they exist. A status line `--statusline replace`
//! replaced is also kept in a note beside the settings (`settings.json.ctxguard-note.json`,
//! with the settings' permissions), which `uninstall` reads to put it back, then deletes. Beside
//! the settings rather than under `$CTXGUARD_HOME`: it follows the file (through a symlinked
//! settings file, to its target's directory), whatever `CTXGUARD_HOME` is when uninstalling.

mod codex;
pub mod pi;
mod target;

use target::settings_path;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use chrono::{DateTime, Local};
use serde_json::{json, Value};

use super::doctor::version::Client;
use crate::client::{self, Accepts};
use crate::config::Env;
use crate::exit::Exit;
use crate::files;
use crate::program;
use crate::settings::{self, Edit, Note, StatusLineMode};

/// Which settings file `install` and `uninstall` edit, and whether to write it.
#[derive(Debug, clap::Args)]
pub struct SettingsTarget {
    /// The settings file (default ~/.claude/settings.json)
    #[arg(long, value_name = "PATH", conflicts_with = "project")]
    pub settings: Option<PathBuf>,
    /// Use ./.claude/settings.json
    #[arg(long)]
    pub project: bool,
    /// Print the change as a diff and write nothing
    #[arg(long)]
    pub dry_run: bool,
}

/// The client `install` and `uninstall` work on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ClientArg {
    /// Claude Code: its settings.json (~/.claude/settings.json, or --settings, --project)
    ClaudeCode,
    #[value(help = "Codex CLI: $CODEX_HOME/hooks.json (default ~/.codex/hooks.json)")]
    Codex,
    #[value(
        help = "pi, the coding agent: an extension in $PI_CODING_AGENT_DIR/extensions/ (default ~/.pi/agent)"
    )]
    Pi,
}

/// What `install` registers: everything, or the status line alone (`--statusline-only`, beside
/// the plugin).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Register {
    All,
    StatusLineOnly,
}

/// How many names a backup tries after its own (`-1`, `-2`, ...) before giving up.
const BACKUP_ATTEMPTS: u32 = 1000;

/// The settings as text and parsed; a missing file is an empty object. Read as the hooks read
/// it: only a regular file (through a link), at most [`client::MAX_SETTINGS`] bytes, never
/// blocking; anything else is refused before anything is written.
fn read_settings(path: &Path) -> Result<(Option<String>, Value)> {
    read_json(path, "settings", client::MAX_SETTINGS)
}

/// A JSON file of the user's (`what` names it in errors) as text and parsed, as
/// [`read_settings`] reads it, with at most `limit` bytes.
fn read_json(path: &Path, what: &str, limit: u64) -> Result<(Option<String>, Value)> {
    let Some(bytes) = files::read_regular(path, what, limit)? else {
        return Ok((None, Value::Object(serde_json::Map::default())));
    };
    let text = String::from_utf8(bytes).map_err(|_| {
        anyhow!(
            "{what} {} is not UTF-8 text; fix it first (ctxguard left it untouched)",
            path.display()
        )
    })?;
    if text.trim().is_empty() {
        return Ok((Some(text), Value::Object(serde_json::Map::default())));
    }
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        anyhow!(
            "{what} {} is not valid JSON ({e}); fix it first (ctxguard left it untouched)",
            path.display()
        )
    })?;
    if !value.is_object() {
        bail!(
            "{what} {} is not a JSON object; fix it first (ctxguard left it untouched)",
            path.display()
        );
    }
    Ok((Some(text), value))
}

fn render(value: &Value) -> Result<String> {
    Ok(serde_json::to_string_pretty(value).context("encoding settings")? + "\n")
}

/// `new` with the line endings of `old`: a file the user keeps with CRLF (Windows editors) is
/// written back with CRLF, not half LF.
fn keep_line_endings(old: Option<&str>, new: &str) -> String {
    match old {
        Some(old) if old.contains("\r\n") => new.replace("\r\n", "\n").replace('\n', "\r\n"),
        _ => new.to_string(),
    }
}

fn directory(path: &Path) -> Result<&Path> {
    match path.parent() {
        Some(p) if p.as_os_str().is_empty() => Ok(Path::new(".")),
        Some(p) => Ok(p),
        None => bail!("{} has no parent directory", path.display()),
    }
}

fn file_name(path: &Path) -> &str {
    path.file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("settings.json")
}

/// Where the status line `--statusline replace` replaced is kept for `uninstall`.
fn note_path(path: &Path) -> Result<PathBuf> {
    Ok(directory(path)?.join(format!("{}.ctxguard-note.json", file_name(path))))
}

/// The `statusLine` value kept in the note, if there is a note.
fn read_note(note: &Path) -> Result<Option<Value>> {
    let Some(bytes) = files::read_state_file(note, "note")? else {
        return Ok(None);
    };
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
        anyhow!(
            "note {} is not valid JSON ({e}); fix or delete it (ctxguard left the settings \
             untouched)",
            note.display()
        )
    })?;
    match value.get("statusLine") {
        Some(line) => Ok(Some(line.clone())),
        None => bail!(
            "note {} has no `statusLine`; fix or delete it (ctxguard left the settings untouched)",
            note.display()
        ),
    }
}

fn write_note(note: &Path, settings: &Path, line: &Value, mode: u32) -> Result<()> {
    let value = json!({
        "about": "the status line `ctxguard install --statusline replace` replaced; \
                  `ctxguard uninstall` puts it back and deletes this file",
        "settings": settings.display().to_string(),
        "statusLine": line,
    });
    files::replace_with_mode(note, render(&value)?.as_bytes(), mode & 0o777)
        .with_context(|| format!("keeping the replaced status line in {}", note.display()))
}

/// Deletes the note; whether there was one.
fn remove_note(note: &Path) -> Result<bool> {
    match fs::remove_file(note) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e).with_context(|| format!("removing {}", note.display())),
    }
}

/// Writes `text` to a new backup of `path` beside it, named with the time `now` to the
/// microsecond, and `-1`, `-2`... when that name is taken (by an earlier backup, or by anything
/// planted there): an existing file is never overwritten, nor a symlink followed, and the
/// backup has `mode` from the moment it exists.
fn write_backup(path: &Path, text: &str, mode: u32, now: DateTime<Local>) -> Result<PathBuf> {
    let stem = format!(
        "{}.ctxguard-backup-{}",
        file_name(path),
        now.format("%Y%m%d-%H%M%S%.6f")
    );
    let dir = directory(path)?;
    for n in 0..BACKUP_ATTEMPTS {
        let backup = match n {
            0 => dir.join(&stem),
            n => dir.join(format!("{stem}-{n}")),
        };
        match files::create_new_with_mode(&backup, text.as_bytes(), mode) {
            Ok(()) => return Ok(backup),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(e).with_context(|| format!("writing backup {}", backup.display()))
            }
        }
    }
    bail!(
        "writing a backup of {}: {BACKUP_ATTEMPTS} names beginning {stem} are taken",
        path.display()
    )
}

/// When the backup `name` (of the settings file named `file`) was made, as its name says (the
/// time to the microsecond, then the counter a collision added), for ordering backups.
fn backup_stamp(file: &str, name: &str) -> Option<(String, u32)> {
    let rest = name.strip_prefix(file)?.strip_prefix(".ctxguard-backup-")?;
    let (stamp, counter) = match rest.split_at_checked(22) {
        Some((stamp, "")) => (stamp, 0),
        Some((stamp, counter)) => (stamp, counter.strip_prefix('-')?.parse().ok()?),
        None => return None,
    };
    let well_formed = stamp.bytes().enumerate().all(|(i, b)| match i {
        8 => b == b'-',
        15 => b == b'.',
        _ => b.is_ascii_digit(),
    });
    well_formed.then(|| (stamp.to_string(), counter))
}

/// The backups of `path` (regular files named as [`write_backup`] names them), oldest first.
fn backups(path: &Path) -> Result<Vec<PathBuf>> {
    let dir = directory(path)?;
    let file = file_name(path);
    let mut backups: Vec<((String, u32), PathBuf)> = fs::read_dir(dir)
        .with_context(|| format!("listing {}", dir.display()))?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| {
            let stamp = backup_stamp(file, e.file_name().to_str()?)?;
            Some((stamp, e.path()))
        })
        .collect();
    backups.sort();
    Ok(backups.into_iter().map(|(_, p)| p).collect())
}

/// Where `install` records that it created the settings file at `path` (there was none before):
/// `uninstall` then removes the file, rather than leave `{}`, when nothing else is in it.
fn created_path(path: &Path) -> Result<PathBuf> {
    Ok(directory(path)?.join(format!("{}.ctxguard-created", file_name(path))))
}

/// When `install` created the settings file at `path` (its record says so) and it holds nothing
/// but ctxguard's entries: its backups (every one a version ctxguard wrote), to go with it. A
/// file the user had before, even an empty one, is `None`: it stays.
fn created_by_install(
    path: &Path,
    uninstall: &dyn Fn(&mut Value) -> Result<Edit, String>,
) -> Result<Option<Vec<PathBuf>>> {
    let regular = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file());
    if !regular || !created_path(path)?.is_file() || note_path(path)?.exists() {
        return Ok(None);
    }
    let (_, mut value) = read_settings(path)?;
    let only_ours = uninstall(&mut value).is_ok_and(|e| !e.changes.is_empty())
        && value.as_object().is_some_and(serde_json::Map::is_empty);
    Ok(if only_ours {
        Some(backups(path)?)
    } else {
        None
    })
}

/// The line of the record that says `install` created the directory too (`~/.claude`).
const DIR_CREATED: &str = "and the directory that holds them: uninstall removes it when empty\n";

/// Removes the settings file `install` created, and its backups (or says it would); then the
/// directory too when `install` created it and nothing else is in it.
fn remove_created(path: &Path, backups: &[PathBuf], dry_run: bool) -> Result<()> {
    let verb = if dry_run { "would remove" } else { "removed" };
    let dir = directory(path)?;
    let dir_ours = fs::read_to_string(created_path(path)?).is_ok_and(|t| t.ends_with(DIR_CREATED));
    if !dry_run {
        for file in std::iter::once(path).chain(backups.iter().map(PathBuf::as_path)) {
            fs::remove_file(file).with_context(|| format!("removing {}", file.display()))?;
        }
        forget_created(path)?;
    }
    println!(
        "{verb} {}: ctxguard's install created it, and it held only ctxguard's entries",
        path.display()
    );
    for b in backups {
        println!("{verb} its backup {}", b.display());
    }
    // Only an empty one: whatever the client or the user put there since stays.
    let record = created_path(path)?;
    let others = fs::read_dir(dir).map_or(1, |entries| {
        let ours = |p: &PathBuf| *p == path || *p == record || backups.contains(p);
        entries.flatten().filter(|e| !ours(&e.path())).count()
    });
    if dir_ours && others == 0 {
        if !dry_run {
            fs::remove_dir(dir).with_context(|| format!("removing {}", dir.display()))?;
        }
        println!(
            "{verb} {}: ctxguard's install created it, and it is empty",
            dir.display()
        );
    }
    Ok(())
}

/// Removes the record that `install` created the settings file at `path`, if there is one.
fn forget_created(path: &Path) -> Result<()> {
    let created = created_path(path)?;
    match fs::remove_file(&created) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", created.display()))
        }
        _ => Ok(()),
    }
}

/// Removes the backups of `path` but two: the oldest (the settings as they were before
/// ctxguard first changed them) and `newest` (the one just made). Only regular files named as
/// [`write_backup`] names them are touched. Returns the ones removed.
fn trim_backups(path: &Path, newest: &Path) -> Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    for backup in backups(path)?.iter().skip(1) {
        if backup.file_name() == newest.file_name() {
            continue;
        }
        fs::remove_file(backup).with_context(|| format!("removing {}", backup.display()))?;
        removed.push(backup.clone());
    }
    Ok(removed)
}

/// Backs up the current file, saves a note if the edit asks for one, then replaces the file
/// atomically, keeping its permissions. Returns the backup.
fn write_settings(
    path: &Path,
    old: Option<&str>,
    new: &str,
    note: (&Path, &Note),
) -> Result<Option<PathBuf>> {
    let dir = directory(path)?;
    let new_dir = !dir.exists();
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mode = files::mode_of(path).unwrap_or(0o644);
    let backup = old
        .map(|text| write_backup(path, text, mode, Local::now()))
        .transpose()?;
    if old.is_none() {
        let created = created_path(path)?;
        let text = format!(
            "ctxguard install created the settings file beside this one (there was none); \
             ctxguard uninstall removes it, and this, when nothing else is in it\n{}",
            if new_dir { DIR_CREATED } else { "" }
        );
        files::replace_with_mode(&created, text.as_bytes(), mode)
            .with_context(|| format!("writing {}", created.display()))?;
    }
    if let (note_path, Note::Save(line)) = note {
        write_note(note_path, path, line, mode)?;
    }
    files::replace_with_mode(path, keep_line_endings(old, new).as_bytes(), mode)?;
    Ok(backup)
}

/// Says where the backup `b` of `path` is, and keeps only it and the first of the older ones.
fn report_backup(path: &Path, b: &Path) {
    println!("backup: {}", b.display());
    // The file is written: a backup that cannot be removed is only one too many.
    match trim_backups(path, b) {
        Ok(removed) if !removed.is_empty() => println!(
            "removed {} older backup{} (kept the first, from before ctxguard changed the file, \
             and this one)",
            removed.len(),
            if removed.len() == 1 { "" } else { "s" }
        ),
        Ok(_) => {}
        Err(e) => println!("notice: older backups were not removed: {e:#}"),
    }
}

/// The text of the first backup of `path` (the file before ctxguard first changed it) when it
/// holds exactly `value`: what `uninstall` writes back, byte for byte, when nothing else in the
/// file changed since, rather than `value` re-indented.
fn original_text(path: &Path, value: &Value) -> Option<String> {
    let first = backups(path).ok()?.into_iter().next()?;
    let (text, original) = read_settings(&first).ok()?;
    (original == *value).then_some(text).flatten()
}

/// Applies `edit`, then prints what changed (or the diff with `--dry-run`); with `restore`
/// (uninstall), the file before ctxguard changed it is given back as it was when the edit
/// leaves exactly it.
fn apply(
    path: &Path,
    dry_run: bool,
    nothing: &str,
    restore: bool,
    edit: impl FnOnce(&mut Value) -> Result<Edit, String>,
) -> Result<()> {
    let (old_text, mut value) = read_settings(path)?;
    let old_render = render(&value)?;
    let edit = edit(&mut value)
        .map_err(|e| anyhow!("settings {}: {e}; left untouched", path.display()))?;
    let note = note_path(path)?;
    let notices = || {
        for n in &edit.notices {
            println!("notice: {n}");
        }
    };
    if edit.changes.is_empty() {
        println!("{nothing} {} (nothing changed)", path.display());
        notices();
        if !dry_run && edit.note == Note::Remove && remove_note(&note)? {
            println!("removed the note {}", note.display());
        }
        return Ok(());
    }
    let original = restore.then(|| original_text(path, &value)).flatten();
    let new_text = match &original {
        Some(text) => text.clone(),
        None => render(&value)?,
    };
    if dry_run {
        println!("would change {}:", path.display());
        print!(
            "{}",
            settings::diff(
                old_text.as_deref().map_or("", |_| old_render.as_str()),
                &new_text
            )
        );
        notices();
        match edit.note {
            Note::Save(_) => println!("would keep the replaced status line in {}", note.display()),
            Note::Remove if note.exists() => println!("would remove the note {}", note.display()),
            _ => {}
        }
        println!("(dry run: nothing written)");
        return Ok(());
    }
    let backup = write_settings(path, old_text.as_deref(), &new_text, (&note, &edit.note))?;
    println!("updated {}:", path.display());
    if original.is_some() {
        println!("  (given back byte for byte as it was before ctxguard first changed it)");
    }
    for c in &edit.changes {
        println!("  - {c}");
    }
    notices();
    if let Some(b) = backup {
        report_backup(path, &b);
    }
    match edit.note {
        Note::Save(_) => println!("replaced status line kept in {}", note.display()),
        Note::Remove if remove_note(&note)? => println!("removed the note {}", note.display()),
        _ => {}
    }
    Ok(())
}

/// The running binary's canonical path (what install writes), and a test for whether another
/// program is ctxguard: the same binary (a link to it), or another copy under any name (known by
/// [`crate::version::is_ctxguard_binary`]), wherever `~`, `$HOME` or `PATH` lead.
fn this_binary(env: &Env) -> Result<(String, impl Fn(&str) -> bool + '_)> {
    let exe = std::env::current_exe().context("finding the ctxguard binary")?;
    let exe = files::canonicalize(&exe).unwrap_or(exe);
    let bin = exe
        .to_str()
        .ok_or_else(|| anyhow!("the binary's path {} is not UTF-8", exe.display()))?
        .to_string();
    // Each program is looked at once, however many entries name it.
    let seen = std::cell::RefCell::new(std::collections::HashMap::<String, bool>::new());
    let same = move |p: &str| {
        if let Some(known) = seen.borrow().get(p) {
            return *known;
        }
        let found = program::locate(p, env.home.as_deref(), env.search_path.as_deref());
        let ours = found.file().is_some_and(|file| {
            files::canonicalize(file).is_ok_and(|c| c == exe)
                || crate::version::is_ctxguard_binary(file)
        });
        seen.borrow_mut().insert(p.to_string(), ours);
        ours
    };
    Ok((bin, same))
}

/// The Claude Code flags, refused for Codex and pi (which have a file of their own and no
/// version to register for).
fn codex_target(target: &SettingsTarget, client_version: Option<&str>) -> Result<()> {
    if target.settings.is_some() || target.project {
        bail!(
            "--settings and --project name Claude Code's settings; Codex's hooks go to \
             $CODEX_HOME/hooks.json (default ~/.codex)"
        );
    }
    if client_version.is_some() {
        bail!("--client-version is Claude Code's; Codex takes the same hooks in every version");
    }
    Ok(())
}

pub fn install(
    client: ClientArg,
    target: &SettingsTarget,
    (mode, what): (StatusLineMode, Register),
    client_version: Option<&str>,
    trust: bool,
) -> Result<Exit> {
    if what == Register::StatusLineOnly {
        match client {
            ClientArg::Codex => {
                bail!("--statusline-only is Claude Code's: Codex has no status line to register")
            }
            ClientArg::Pi => {
                bail!("--statusline-only is Claude Code's: pi has no status line to register")
            }
            ClientArg::ClaudeCode => {}
        }
        if mode == StatusLineMode::Skip {
            bail!(
                "--statusline-only registers only the status line, which --statusline skip \
                 leaves alone: give one of them"
            );
        }
    }
    if client == ClientArg::Codex {
        codex_target(target, client_version)?;
        codex::install(target.dry_run, trust)?;
        return Ok(Exit::Ok);
    }
    if client == ClientArg::Pi {
        pi::refuse_flags(target, client_version, trust)?;
        pi::install(target.dry_run)?;
        return Ok(Exit::Ok);
    }
    if trust {
        bail!(
            "--trust is for --client codex: Claude Code runs the hooks of its settings without \
             asking"
        );
    }
    let env = Env::from_process();
    let path = settings_path(target, &env)?;
    let (bin, same) = this_binary(&env)?;
    if what == Register::StatusLineOnly {
        apply(
            &path,
            target.dry_run,
            "ctxguard's status line is already in",
            false,
            |v| settings::install_statusline(v, &bin, &same, mode),
        )?;
        return Ok(Exit::Ok);
    }
    refuse_beside_the_plugin(&env)?;
    let accepts = client_accepts(&env, client_version)?;
    apply(
        &path,
        target.dry_run,
        "ctxguard is already installed in",
        false,
        |v| settings::install(v, &bin, &same, mode, accepts),
    )?;
    Ok(Exit::Ok)
}

/// The hooks are not registered in a settings file while the plugin registers them too: each
/// would run twice.
fn refuse_beside_the_plugin(env: &Env) -> Result<()> {
    let settings = super::plugin::client_settings(env);
    let Some((name, file)) = super::plugin::enabled(&settings).into_iter().next() else {
        return Ok(());
    };
    bail!(
        "the plugin {name} is enabled (in {}) and registers ctxguard's hooks itself: run \
         `ctxguard install --statusline-only` to add the status line beside it, or disable the \
         plugin first (`claude plugin disable {name}`) to register the hooks here instead",
        file.path.display()
    )
}

/// What the client's settings may hold: the version given, else the `claude` on PATH's, else
/// everything. Says which, so a user running another client knows to pass `--client-version`.
fn client_accepts(env: &Env, given: Option<&str>) -> Result<Accepts> {
    let found = match super::doctor::version::client(env, given)? {
        Client::Version(path, v) => Some((v, path.display().to_string())),
        _ => None,
    };
    let (major, minor, patch) = client::FULL_SINCE;
    let Some((version, from)) = found else {
        println!(
            "No Claude Code version found (no `claude` on PATH or in ~/.claude/local answered \
             `--version`): hooks \
             registered for {major}.{minor}.{patch} and later (exec form, PostCompact); for an \
             older client, run install again with --client-version VERSION"
        );
        return Ok(Accepts::ALL);
    };
    let accepts = Accepts::version(&version);
    if accepts == Accepts::ALL {
        println!("Claude Code {version} ({from}): hooks in exec form, PostCompact included");
    } else {
        println!(
            "Claude Code {version} ({from}): hooks registered as shell lines, without PostCompact \
             (the exec form and PostCompact are used from {major}.{minor}.{patch} on; after \
             upgrading the client, run install again)"
        );
    }
    Ok(accepts)
}

/// Takes ctxguard out of the settings; with `purge`, then removes its state directory too
/// ([`super::purge`]), which a settings file that cannot be edited stops.
pub fn uninstall(client: ClientArg, target: &SettingsTarget, purge: bool) -> Result<Exit> {
    let env = Env::from_process();
    if client == ClientArg::Codex {
        codex_target(target, None)?;
        if purge {
            super::purge::refuse_unsafe_root(&env)?;
        }
        codex::uninstall(target.dry_run)?;
        if purge {
            super::purge::run(&env, target.dry_run)?;
        }
        return Ok(Exit::Ok);
    }
    if client == ClientArg::Pi {
        pi::refuse_flags(target, None, false)?;
        if purge {
            super::purge::refuse_unsafe_root(&env)?;
        }
        pi::uninstall(target.dry_run)?;
        if purge {
            super::purge::run(&env, target.dry_run)?;
        }
        return Ok(Exit::Ok);
    }
    let path = settings_path(target, &env)?;
    if purge {
        // A state directory that must not be purged stops everything, settings included.
        super::purge::refuse_unsafe_root(&env)?;
    }
    if path.exists() {
        let (bin, same) = this_binary(&env)?;
        let replaced = read_note(&note_path(&path)?)?;
        let edit = |v: &mut Value| settings::uninstall(v, &bin, &same, replaced.as_ref());
        if let Some(backups) = created_by_install(&path, &edit)? {
            remove_created(&path, &backups, target.dry_run)?;
            if target.dry_run {
                println!("(dry run: nothing written)");
            }
        } else {
            apply(
                &path,
                target.dry_run,
                "ctxguard is not registered in",
                true,
                edit,
            )?;
            // What is left is the user's now, however it began.
            if !target.dry_run {
                forget_created(&path)?;
            }
        }
    } else {
        println!("no settings at {} (nothing to remove)", path.display());
    }
    if purge {
        super::purge::run(&env, target.dry_run)?;
        super::plugin::purge(&env, target.dry_run)?;
    }
    Ok(Exit::Ok)
}

#[cfg(test)]
mod tests;
