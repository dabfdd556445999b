//! `scoped-sync-run` starting real processes (a shell, no GPU).

use std::process::Command;
use std::time::{Duration, Instant};

const RUN: &str = env!("CARGO_BIN_EXE_scoped-sync-run");

#[test]
fn every_rank_gets_its_rank_the_size_and_one_secret() {
    let output = Command::new(RUN)
        .args(["-n", "3", "--", "sh", "-c"])
        .arg("echo $RANK $WORLD_SIZE $LOCAL_RANK $SCOPED_SYNC_JOB_ID $SCOPED_SYNC_JOB_SECRET")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    let mut lines: Vec<Vec<&str>> = text.lines().map(|l| l.split(' ').collect()).collect();
    lines.sort();
    assert_eq!(lines.len(), 3, "{text}");
    for (rank, line) in lines.iter().enumerate() {
        assert_eq!(line[..3], [rank.to_string(), "3".into(), rank.to_string()]);
        assert_eq!(line[3], lines[0][3], "one job name");
        assert_eq!(line[4], lines[0][4], "one secret");
        assert_eq!(line[4].len(), 64, "a 256-bit secret in hex");
    }
}

#[test]
fn a_failed_rank_ends_the_job_with_its_code_and_the_rest_are_killed_after_the_grace() {
    let started = Instant::now();
    let status = Command::new(RUN)
        .args(["-n", "3", "--grace", "0.2", "--", "sh", "-c"])
        .arg("if [ $RANK = 1 ]; then exit 3; fi; sleep 30")
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(3));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_bad_command_line_says_how_to_use_it() {
    let output = Command::new(RUN).args(["-n", "2"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let text = String::from_utf8(output.stderr).unwrap();
    assert!(
        text.contains("no program") && text.contains("usage:"),
        "{text}"
    );
}

#[test]
fn a_sigterm_to_the_launcher_reaches_every_rank() {
    let mut launcher = Command::new(RUN)
        .args(["-n", "2", "--grace", "20", "--", "sh", "-c"])
        // Each rank says it is ready, then ends with 7 at SIGTERM.
        .arg("trap 'exit 7' TERM; echo ready; while :; do sleep 0.05; done")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines =
        std::io::BufRead::lines(std::io::BufReader::new(launcher.stdout.take().unwrap()));
    for _ in 0..2 {
        assert_eq!(lines.next().unwrap().unwrap(), "ready");
    }
    let started = Instant::now();
    // SAFETY: the launcher is our child, not yet waited for: its pid is its own.
    let sent = unsafe { libc::kill(launcher.id() as libc::pid_t, libc::SIGTERM) };
    assert_eq!(sent, 0);
    let status = launcher.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(7),
        "the ranks' exit code, not the launcher's death"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}
