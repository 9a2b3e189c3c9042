//! What issue 43's held-back sessions still lost after its first fixes, each through the binary
//! on invented text of the real records' form: a failure redone by the same check with another
//! reader of its output, teammates' completion messages, and decisions from before an earlier
//! compaction.

use serde_json::json;

use crate::recovery_classes::Session;
use crate::recovery_round5::items_of;

/// A pipeline is the check its first stage runs. Its reader failing (an interpreter given its
/// program inline, as `… | python3 -c "…"` whose interpreter is not installed, exit 126) is
/// redone by the same check read another way; a run the client blocked (`sleep N; …`) is
/// redone by the same pipeline without the sleep.
#[test]
fn a_check_redone_with_another_reader_of_its_output_is_no_current_failure() {
    let mut s = Session::new("Fix the lint findings file by file");
    s.bash(
        "vet-lint run --timeout=5m --format=json ./... 2>/dev/null | python3 -c \"\nimport json, sys\nrows = json.load(sys.stdin)\nprint(len(rows), 'total')\n\"",
        "Exit code 126\nNo interpreter is configured for python3\nAdd one of these to .tool-versions",
        true,
    );
    s.bash(
        "vet-lint run --timeout=5m ./... 2>&1 | grep -E '^\\w' | cut -d: -f1 | sort | uniq -c",
        "  12 src/store.go\n   4 src/api.go",
        false,
    );
    s.bash(
        "sleep 20; gh pr view 12 -R o/r --json statusCheckRollup --jq '.statusCheckRollup[] | .name' 2>&1 | head",
        "<tool_use_error>Blocked: sleep 20 followed by: gh pr view 12 -R o/r --json statusCheckRollup. To wait for a condition, use Monitor with an until-loop.</tool_use_error>",
        true,
    );
    s.bash(
        "gh pr view 12 -R o/r --json statusCheckRollup --jq '.statusCheckRollup[] | .name' 2>&1 | head",
        "build\nlint",
        false,
    );
    // A script the interpreter runs from a file is a run of its own: its failure stays.
    s.bash(
        "vet-lint run ./... | python3 scripts/tally.py",
        "Exit code 1\nTraceback (most recent call last):\nKeyError: 'Pos'",
        true,
    );
    s.bash("vet-lint run ./... | wc -l", "16", false);
    let block = s.block();
    assert_eq!(
        items_of(&block, "Recent tool failures"),
        ["Bash: vet-lint run ./... | python3 scripts/tally.py → KeyError: 'Pos'"],
        "{block}"
    );
}
