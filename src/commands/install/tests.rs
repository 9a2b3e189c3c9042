//! Backups on a temporary directory: their names, their trimming, a planted link (tests only).

use super::*;

#[test]
fn backups_in_the_same_microsecond_get_their_own_names() {
    let t = tempfile::tempdir().unwrap();
    let path = t.path().join("settings.json");
    let now = Local::now();
    let first = write_backup(&path, "pristine", 0o600, now).unwrap();
    let second = write_backup(&path, "second", 0o600, now).unwrap();
    let third = write_backup(&path, "third", 0o640, now).unwrap();
    assert_eq!(
        second.to_str().unwrap(),
        format!("{}-1", first.display()),
        "a counter on collision"
    );
    assert_eq!(third.to_str().unwrap(), format!("{}-2", first.display()));
    assert_eq!(fs::read_to_string(&first).unwrap(), "pristine");
    assert_eq!(fs::read_to_string(&second).unwrap(), "second");
    #[cfg(unix)]
    assert_eq!(
        (files::mode_of(&first), files::mode_of(&third)),
        (Some(0o600), Some(0o640))
    );
    let name = first.file_name().unwrap().to_str().unwrap();
    assert!(
        name.starts_with(&format!(
            "settings.json.ctxguard-backup-{}.",
            now.format("%Y%m%d-%H%M%S")
        )) && name.len() == "settings.json.ctxguard-backup-20250101-120000.123456".len(),
        "{name}"
    );
}

#[test]
fn backups_beyond_the_first_and_the_newest_are_removed() {
    let t = tempfile::tempdir().unwrap();
    let path = t.path().join("settings.json");
    let now = Local::now();
    let at = |secs: i64| now + chrono::Duration::seconds(secs);
    let first = write_backup(&path, "pristine", 0o600, at(0)).unwrap();
    let mut last = first.clone();
    for (i, secs) in [1, 2, 2, 3].into_iter().enumerate() {
        last = write_backup(&path, &format!("edit {i}"), 0o600, at(secs)).unwrap();
    }
    // Not ours: another file's backup, a name that only looks like one, a note.
    let others = [
        "other.json.ctxguard-backup-20250101-120000.123456",
        "settings.json.ctxguard-backup-notes",
        "settings.json.ctxguard-note.json",
    ];
    for other in others {
        fs::write(t.path().join(other), "x").unwrap();
    }
    let removed = trim_backups(&path, &last).unwrap();
    assert_eq!(removed.len(), 3, "{removed:?}");
    let mut left: Vec<String> = fs::read_dir(t.path())
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .collect();
    left.sort();
    let mut want: Vec<String> = [first.clone(), last.clone()]
        .iter()
        .map(|p| p.display().to_string())
        .chain(
            others
                .iter()
                .map(|o| t.path().join(o).display().to_string()),
        )
        .collect();
    want.sort();
    assert_eq!(left, want);
    assert_eq!(fs::read_to_string(&first).unwrap(), "pristine");
    // Names read back: the time, then the counter.
    let name = |p: &Path| p.file_name().unwrap().to_str().unwrap().to_string();
    assert!(backup_stamp("settings.json", &name(&first)).is_some_and(|(_, n)| n == 0));
    assert_eq!(
        backup_stamp(
            "settings.json",
            "settings.json.ctxguard-backup-20250101-120000.123456-12"
        ),
        Some(("20250101-120000.123456".into(), 12))
    );
    assert_eq!(
        backup_stamp("settings.json", "settings.json.ctxguard-backup-2025"),
        None
    );
}

#[cfg(unix)]
#[test]
fn a_symlink_planted_at_the_backup_name_is_skipped_not_followed() {
    let t = tempfile::tempdir().unwrap();
    let path = t.path().join("settings.json");
    let now = Local::now();
    let name = format!(
        "settings.json.ctxguard-backup-{}",
        now.format("%Y%m%d-%H%M%S%.6f")
    );
    let stolen = t.path().join("stolen");
    std::os::unix::fs::symlink(&stolen, t.path().join(&name)).unwrap();
    let backup = write_backup(&path, "secret", 0o600, now).unwrap();
    assert_eq!(backup, t.path().join(format!("{name}-1")));
    assert!(!stolen.exists(), "nothing written through the link");
}
