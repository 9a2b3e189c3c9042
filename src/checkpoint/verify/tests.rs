use super::*;

#[test]
fn verification_commands() {
    for command in [
        "cargo test",
        "cargo clippy --all-targets -- -D warnings",
        "env GOCACHE=/private/tmp/go-cache mise run check",
        "mise tasks run test:e2e",
        "rustup toolchain install nightly-2026-06-29 --profile minimal && cargo +nightly-2026-06-29 build --all-features",
        "npm test",
        "npm run build",
        "pnpm --filter @cipherbox/crypto test -- --reporter=verbose 2>&1",
        "bun run test 2>&1 | tail -5",
        "bun run typecheck 2>&1",
        "cd app && npx jest --testPathPattern='shares' --no-coverage 2>&1 | tail -50",
        "MIX_ENV=test mix test --seed 0 2>&1 | tail -30",
        "mix credo --strict 2>&1 | tail -15",
        "flutter test test/features/vpn_profiles/ 2>&1",
        "python3 -m pytest tests/test_find_project_sessions.py -v",
        "pytest -x",
        "go vet ./...",
        "dart analyze",
        "tsc --noEmit",
        "just check 2>&1",
        "uv run pytest",
        "make test",
        "make",
        "npx vite build",
        "npx playwright test e2e/login.spec.ts",
        "dotnet test",
        "./gradlew test",
        "ruff check .",
        "eslint src",
        "go test ./...",
        "npx webpack --mode production",
        "cargo fmt --check",
        "cargo fmt --all -- --check",
        "mix format --check-formatted",
        "ruff format --check .",
        "yarn vitest",
        "pnpm exec jest --ci",
        "python -m ruff check src",
    ] {
        assert!(is_verification(command), "{command}");
    }
    for command in [
        "git status",
        "bun run lint:fix 2>&1",
        "ls tests/",
        "cargo run -- --help",
        "python3 export.py --test",
        "echo test",
        "mkdir -p test/features",
        "npm install",
        "gh pr create --title test",
        "npx vite",
        "make clean install",
        // spotter-ae4a77f8: a bare `mix format` after `mix test` is no verdict on the tests.
        "mix format",
        "cargo fmt",
        "ruff format .",
        "python -m ruff format .",
        "yarn add vitest",
        "mise task info test:e2e",
        "mise tasks ls",
    ] {
        assert!(!is_verification(command), "{command}");
    }
}

#[test]
fn a_verification_is_named_from_its_runner_on() {
    assert_eq!(
        from_runner("cd /Users/me/work/very/long/path/app && npx jest --testPathPattern='src/shares' 2>&1 | tail -50"),
        "npx jest --testPathPattern='src/shares' 2>&1 | tail -50"
    );
    assert_eq!(from_runner("cargo test -p core"), "cargo test -p core");
    assert_eq!(from_runner("git status"), "git status");
    // The variables set before the run take no room from its own words.
    assert_eq!(
        from_runner("cd x && env GOCACHE=/private/tmp/go-cache mise exec -- go test -race ./a"),
        "mise exec -- go test -race ./a"
    );
    assert_eq!(from_runner("MIX_ENV=test mix test"), "mix test");
    assert_eq!(
        from_runner("timeout 60 cargo test"),
        "timeout 60 cargo test"
    );
}

/// Issue 33, classes 1-3: a run on a later line of its command, the worst verdict of a
/// compound command, and a coloured summary.
#[test]
fn a_run_on_any_line_the_worst_verdict_and_colours_stripped() {
    assert!(is_verification("cd /work/app\nnpx vitest run src/date"));
    assert_eq!(
        from_runner("cd /work/app\nnpx vitest run src/date"),
        "npx vitest run src/date"
    );
    assert!(is_verification("echo start && pnpm test"));
    assert!(is_verification("mise run test:ci 2>&1 | tail -25"));
    assert!(is_verification("task lint"));
    // A here-document's body is text, not a command.
    assert!(!is_verification(
        "git commit -m \"$(cat <<'EOF'\ncargo test now passes\nEOF\n)\""
    ));
    assert!(is_verification("cat <<EOF > x\nhi\nEOF\ncargo test"));
    // ruff passes, then pytest fails: the run failed.
    assert_eq!(
        v(
            "All checks passed!\n....F\n2 failed, 1074 passed in 12.31s",
            false
        ),
        ("2 failed, 1074 passed in 12.31s".into(), false)
    );
    assert!(is_count_summary("===== 3 passed, 1 skipped in 0.52s ====="));
    assert!(!is_count_summary("returns 3 errors in 2 places"));
    // vitest's coloured summary, after an unrelated FAIL line of a test's own output.
    let coloured = "FAIL src/date.test.ts > formats\n \x1b[2m Test Files \x1b[22m \x1b[1m\x1b[31m1 failed\x1b[39m\x1b[22m\x1b[2m | \x1b[22m\x1b[1m\x1b[32m3 passed\x1b[39m\x1b[22m\x1b[90m (4)\x1b[39m";
    let (line, passed) = v(coloured, false);
    assert!(!passed);
    assert!(
        line.starts_with("Test Files 1 failed | 3 passed (4)"),
        "{line}"
    );
}

fn v(output: &str, errored: bool) -> (String, bool) {
    let v = verdict(output, errored);
    (v.line, v.passed)
}

/// Verdict lines as the real transcripts have them (../shared/transcripts, see
/// fixtures/transcripts/SOURCES.txt).
#[test]
fn verdicts_of_real_runs() {
    // spotter-ae4a77f8.jsonl: `mix test | tail` exits 0 with failures.
    assert_eq!(
        v("....\nFinished in 1.9 seconds (0.4s async, 1.5s sync)\n14 doctests, 297 tests, 11 failures", false),
        ("14 doctests, 297 tests, 11 failures".into(), false)
    );
    assert_eq!(
        v(
            "....\nFinished in 2.2 seconds\n14 doctests, 297 tests, 0 failures",
            false
        ),
        ("14 doctests, 297 tests, 0 failures".into(), true)
    );
    // cybervpn-cdd85d16.jsonl: flutter.
    assert_eq!(
        v("Exit code 1\n00:06 +0 -6: /x/a_test.dart: adds a profile [E]\n00:06 +0 -6: Some tests failed.", true),
        ("00:06 +0 -6: Some tests failed.; first failure: 00:06 +0 -6: /x/a_test.dart: adds a profile [E]".into(), false)
    );
    assert_eq!(
        v(
            "00:01 +53: /x/b_test.dart: Subscrip\n00:01 +54: All tests passed!",
            false
        ),
        ("00:01 +54: All tests passed!".into(), true)
    );
    // ctxeval-8209f1c2.jsonl: bun, biome.
    assert_eq!(
        v(
            " 1309 pass\n 0 fail\n 2849 expect() calls\nRan 1309 tests across 58 files. [766.00ms]",
            false
        ),
        (
            "0 fail; Ran 1309 tests across 58 files. [766.00ms]".into(),
            true
        )
    );
    assert_eq!(
        v("Exit code 1\n$ biome check --error-on-warnings\n  × Some errors were emitted while running checks.\nerror: script \"lint\" exited with code 1", true),
        ("error: script \"lint\" exited with code 1".into(), false)
    );
    assert_eq!(
        v(
            "$ biome check --error-on-warnings\nChecked 286 files in 85ms. No fixes applied.",
            false
        ),
        ("Checked 286 files in 85ms. No fixes applied.".into(), true)
    );
    // cipherbox-f7594e2b.jsonl: jest and vitest.
    assert_eq!(
        v("FAIL src/shares/shares.service.spec.ts\nTests:       1 failed, 13 passed, 14 total\nSnapshots:   0 total\nRan all test suites.", false),
        ("Tests: 1 failed, 13 passed, 14 total; first failure: FAIL src/shares/shares.service.spec.ts".into(), false)
    );
    assert_eq!(
        v(
            "      Tests  241 passed (241)\n   Start at  17:13:04",
            false
        ),
        ("Tests 241 passed (241)".into(), true)
    );
    // cctrace-phase0.jsonl: pytest; reliability: cargo.
    assert!(
        v(
            "============================== 3 passed in 0.16s ===============================",
            false
        )
        .1
    );
    assert_eq!(
        v("test a ... ok\ntest b ... FAILED\n\ntest result: FAILED. 1 passed; 1 failed; 0 ignored", true),
        ("test result: FAILED. 1 passed; 1 failed; 0 ignored; first failure: test b ... FAILED".into(), false)
    );
    // Nothing to go on.
    assert_eq!(
        v("", false),
        ("exit 0, no summary line in its output".into(), true)
    );
}

/// Issue 27: the verdict lines of more runners.
#[test]
fn verdicts_of_more_runners() {
    // A Codex rollout (jdx/mise): the e2e runner's closing time, no count; yarn's.
    assert_eq!(
        v(
            "SUCCESS: [text] 'spy@1.0.0' is in output\ncli/test_x: 6s\n\nFinished in 6.59s\n",
            false
        ),
        ("Finished in 6.59s".into(), true)
    );
    assert_eq!(
        v("$ eslint .\n✨  Done in 3.21s.", false),
        ("✨ Done in 3.21s.".into(), true)
    );
    // A failure before the closing time wins: mise's e2e runner, read without its exit code.
    assert!(!v("test a ... FAILED\nFinished in 2s", false).1);
    let (line, passed) = v(
        "cli/test_lock: 20s\nERROR: E2E test cli/test_lock failed: exited with status code 1\nTest environment can be examined in /tmp/x\n\nFinished in 47.12s\n[test:e2e] ERROR task failed\n",
        false,
    );
    assert!(!passed);
    assert!(
        line.contains("exited with status code 1") || line.contains("task failed"),
        "{line}"
    );
    assert!(!v("--- FAIL: TestX\nexit status 1\nFAIL\tpkg\t0.1s", false).1);
    // cargo's closing warning is not the reason the build failed.
    assert_eq!(
        v("error: trailing semicolon in macro\nerror: could not compile `mise` (build script) due to 30 previous errors\nwarning: build failed, waiting for other jobs to finish...\n", true),
        ("error: could not compile `mise` (build script) due to 30 previous errors".into(), false)
    );
    // cargo's progress, read while the build still runs, says nothing of it.
    assert_eq!(
        v("    Checking rattler v0.46.0\n    Checking testing_table v0.3.0\n   Compiling test-log v0.2.21\n", false).0,
        "exit 0, no summary line in its output"
    );
    // omp-6c0a282a.jsonl and issue 27: vite, jest with a test that names errors, gradle.
    assert_eq!(
        v("vite v5.4.2 building for production...\n✓ 1284 modules transformed.\ndist/index.html  0.46 kB\n✓ built in 3.39s", false),
        ("✓ built in 3.39s".into(), true)
    );
    assert_eq!(
        v("PASS src/a.test.ts\n  ✓ reports 2 errors on a bad file (4 ms)\nTest Suites: 5 passed, 5 total\nTests:       49 passed, 49 total\nSnapshots:   0 total\nRan all test suites.", false),
        ("Tests: 49 passed, 49 total".into(), true)
    );
    assert_eq!(
        v(
            "> Task :app:test\n\nBUILD SUCCESSFUL in 12s\n7 actionable tasks: 7 executed",
            false
        ),
        ("BUILD SUCCESSFUL in 12s".into(), true)
    );
    // omp-6c0a282a.jsonl: go test filtered to its package lines.
    assert_eq!(
        v(
            "ok  \tgithub.com/x/omp/src/cli\t5.510s\nok  \tgithub.com/x/omp/src/cli/auth\t(cached)",
            false
        ),
        ("ok github.com/x/omp/src/cli/auth (cached)".into(), true)
    );
    assert!(
        !v(
            "--- FAIL: TestRender (0.00s)\nFAIL\tgithub.com/x/omp/src/cli\t0.2s\nFAIL",
            false
        )
        .1
    );
    // cipherbox-f7594e2b.jsonl: turbo's prefixed lines, rustc's source excerpts naming errors.
    assert_eq!(
        v("apps/desktop build: 11 |     #[error(\"Invalid hex string\")]\napps/desktop build: ✓ built in 2.57s\napps/desktop build: Done", false),
        ("apps/desktop build: ✓ built in 2.57s".into(), true)
    );
    assert_eq!(
        v(
            "Exit code 2\nsrc/a.ts(3,1): error TS2304: Cannot find name 'x'.",
            true
        ),
        (
            "src/a.ts(3,1): error TS2304: Cannot find name 'x'.".into(),
            false
        )
    );
}
