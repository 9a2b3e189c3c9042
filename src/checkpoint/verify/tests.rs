use super::*;

#[test]
fn verification_commands() {
    for command in [
        "cargo test",
        "cargo clippy --all-targets -- -D warnings",
        "env GOCACHE=/private/tmp/go-cache mise run check",
        "mise tasks run test:e2e",
        "rustup toolchain install nightly-2026-03-14 --profile minimal && cargo +nightly-2026-03-14 build --workspace",
        "npm test",
        "npm run build",
        "pnpm --filter @kite/engine test -- --reporter=dot 2>&1",
        "bun run test 2>&1 | tail -8",
        "bun run typecheck 2>&1 | head -20",
        "cd web && npx jest --testPathPattern='cart' --silent 2>&1 | tail -40",
        "MIX_ENV=test mix test --max-failures 3 2>&1 | tail -20",
        "mix credo --all 2>&1 | tail -12",
        "flutter test test/widgets/note_list/ 2>&1",
        "python3 -m pytest tests/test_parse_config.py -q",
        "pytest -x",
        "go vet ./...",
        "dart analyze",
        "tsc --noEmit",
        "just verify 2>&1",
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
        "bun run format:write 2>&1",
        "ls tests/",
        "cargo run -- --help",
        "python3 export.py --test",
        "echo test",
        "mkdir -p test/features",
        "npm install",
        "gh pr create --title test",
        "npx vite",
        "make clean install",
        // As real Elixir sessions run it: a bare `mix format` after `mix test` is no verdict on
        // the tests.
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
        from_runner("cd /Users/me/work/very/long/path/web && npx jest --testPathPattern='src/cart' 2>&1 | tail -40"),
        "npx jest --testPathPattern='src/cart' 2>&1 | tail -40"
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

/// Verdict lines in the forms real sessions' runs print them (written here, with invented
/// numbers and names).
#[test]
fn verdicts_of_real_runs() {
    // The form of a real 2.1.49 `mix test | tail` result: exit 0 with failures.
    assert_eq!(
        v("....\nFinished in 3.4 seconds (0.7s async, 2.7s sync)\n9 doctests, 182 tests, 4 failures", false),
        ("9 doctests, 182 tests, 4 failures".into(), false)
    );
    assert_eq!(
        v(
            "....\nFinished in 3.1 seconds\n9 doctests, 182 tests, 0 failures",
            false
        ),
        ("9 doctests, 182 tests, 0 failures".into(), true)
    );
    // flutter's, as a real 2.1.42 session has them: a failed run, then a passing one.
    assert_eq!(
        v("Exit code 1\n00:04 +0 -3: /x/a_test.dart: saves a note [E]\n00:04 +0 -3: Some tests failed.", true),
        ("00:04 +0 -3: Some tests failed.; first failure: 00:04 +0 -3: /x/a_test.dart: saves a note [E]".into(), false)
    );
    assert_eq!(
        v(
            "00:02 +38: /x/b_test.dart: Sync\n00:02 +39: All tests passed!",
            false
        ),
        ("00:02 +39: All tests passed!".into(), true)
    );
    // bun's and biome's, in the forms of a real 2.1.45 session.
    assert_eq!(
        v(
            " 842 pass\n 0 fail\n 1730 expect() calls\nRan 842 tests across 41 files. [512.00ms]",
            false
        ),
        (
            "0 fail; Ran 842 tests across 41 files. [512.00ms]".into(),
            true
        )
    );
    assert_eq!(
        v("Exit code 1\n$ biome ci ./src\n  × Some errors were emitted while running checks.\nerror: script \"check\" exited with code 1", true),
        ("error: script \"check\" exited with code 1".into(), false)
    );
    assert_eq!(
        v(
            "$ biome ci ./src\nChecked 131 files in 42ms. No fixes applied.",
            false
        ),
        ("Checked 131 files in 42ms. No fixes applied.".into(), true)
    );
    // jest's and vitest's, in the forms of a real 2.1.49 session.
    assert_eq!(
        v("FAIL src/cart/cart.service.spec.ts\nTests:       2 failed, 9 passed, 11 total\nSnapshots:   0 total\nRan all test suites.", false),
        ("Tests: 2 failed, 9 passed, 11 total; first failure: FAIL src/cart/cart.service.spec.ts".into(), false)
    );
    assert_eq!(
        v("      Tests  96 passed (96)\n   Start at  09:41:27", false),
        ("Tests 96 passed (96)".into(), true)
    );
    // pytest's and cargo's.
    assert!(
        v(
            "============================== 5 passed in 0.43s ===============================",
            false
        )
        .1
    );
    assert_eq!(
        v("test a ... ok\ntest b ... FAILED\n\ntest result: FAILED. 1 passed; 1 failed; 2 ignored", true),
        ("test result: FAILED. 1 passed; 1 failed; 2 ignored; first failure: test b ... FAILED".into(), false)
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
    // The form of a real Codex rollout's e2e runner: its closing time, no count; yarn's.
    assert_eq!(
        v(
            "SUCCESS: [text] 'kite@2.3.0' is in output\ncli/test_y: 4s\n\nFinished in 4.18s\n",
            false
        ),
        ("Finished in 4.18s".into(), true)
    );
    assert_eq!(
        v("$ eslint .\n✨  Done in 3.21s.", false),
        ("✨ Done in 3.21s.".into(), true)
    );
    // A failure before the closing time wins: that e2e runner's, read without its exit code.
    assert!(!v("test a ... FAILED\nFinished in 2s", false).1);
    let (line, passed) = v(
        "cli/test_sync: 13s\nERROR: E2E test cli/test_sync failed: exited with status code 1\nTest environment can be examined in /tmp/x\n\nFinished in 31.75s\n[test:smoke] ERROR task failed\n",
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
        v("error: missing fragment specifier in macro\nerror: could not compile `kite` (build script) due to 7 previous errors\nwarning: build failed, waiting for other jobs to finish...\n", true),
        ("error: could not compile `kite` (build script) due to 7 previous errors".into(), false)
    );
    // cargo's progress, read while the build still runs, says nothing of it.
    assert_eq!(
        v("    Checking serde v1.0.210\n    Checking testing_helpers v0.2.0\n   Compiling test-case v3.3.1\n", false).0,
        "exit 0, no summary line in its output"
    );
    // Issue 27, in the forms real sessions print them: vite, jest with a test that names
    // errors, gradle.
    assert_eq!(
        v("vite v5.4.2 building for production...\n✓ 1284 modules transformed.\ndist/index.html  0.46 kB\n✓ built in 3.39s", false),
        ("✓ built in 3.39s".into(), true)
    );
    assert_eq!(
        v("PASS src/a.test.ts\n  ✓ reports 2 errors on a bad file (4 ms)\nTest Suites: 5 passed, 5 total\nTests:       37 passed, 37 total\nSnapshots:   0 total\nRan all test suites.", false),
        ("Tests: 37 passed, 37 total".into(), true)
    );
    assert_eq!(
        v(
            "> Task :app:test\n\nBUILD SUCCESSFUL in 12s\n7 actionable tasks: 7 executed",
            false
        ),
        ("BUILD SUCCESSFUL in 12s".into(), true)
    );
    // go test filtered to its package lines (the form of a real session's).
    assert_eq!(
        v(
            "ok  \tgithub.com/x/kite/cmd\t4.207s\nok  \tgithub.com/x/kite/cmd/sync\t(cached)",
            false
        ),
        ("ok github.com/x/kite/cmd/sync (cached)".into(), true)
    );
    assert!(
        !v(
            "--- FAIL: TestRender (0.00s)\nFAIL\tgithub.com/x/kite/cmd\t0.2s\nFAIL",
            false
        )
        .1
    );
    // turbo's prefixed lines, rustc's source excerpts naming errors (a real 2.1.49 session's
    // form).
    assert_eq!(
        v("apps/web build: 7 |     #[error(\"Bad checksum\")]\napps/web build: ✓ built in 1.84s\napps/web build: Done", false),
        ("apps/web build: ✓ built in 1.84s".into(), true)
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
