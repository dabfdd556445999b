//! The process group without GPUs: the rendezvous, the secret's refusal, the
//! all-gather with file descriptors, and the news of a process that dies, aborts or
//! leaves. Ranks are threads of this test, and for a death a child process (this test
//! binary again, running `child_joins_then_is_killed`).

use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use scoped_sync::process::{
    JobSecret, PeerFailure, ProcessGroup, ProcessGroupError, Rendezvous, DIRECTORY_VARIABLE,
    JOB_VARIABLE, SECRET_VARIABLE,
};

/// A directory of this test's own (the socket path must stay short).
fn directory(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("sspg-{name}-{}", std::process::id()))
}

/// Joins ranks `ranks` of a group of `size` on threads, each running `body`.
fn on_threads<R: Send + 'static>(
    name: &str,
    size: usize,
    ranks: impl IntoIterator<Item = usize>,
    secret: &JobSecret,
    body: impl Fn(ProcessGroup) -> R + Send + Sync + Clone + 'static,
) -> Vec<std::thread::JoinHandle<R>> {
    ranks
        .into_iter()
        .map(|rank| {
            let (secret, directory, body) = (secret.clone(), directory(name), body.clone());
            let job = name.to_owned();
            std::thread::spawn(move || {
                let group = Rendezvous::new(rank, size, secret)
                    .directory(directory)
                    .job(&job)
                    .timeout(Duration::from_secs(20))
                    .join()
                    .unwrap();
                body(group)
            })
        })
        .collect()
}

#[test]
fn four_ranks_gather_bytes_and_file_descriptors() {
    let secret = JobSecret::generate().unwrap();
    let ranks = on_threads("gather", 4, 0..4, &secret, |group| {
        let mut file = tempfile(&format!("gather-{}", group.rank()));
        write!(file, "rank {}", group.rank()).unwrap();
        let mut seen = Vec::new();
        for round in 0..3_u8 {
            let parts = group
                .all_gather(&[group.rank() as u8, round], &[file.as_fd()])
                .unwrap();
            assert_eq!(parts.len(), 4);
            for (rank, part) in parts.into_iter().enumerate() {
                assert_eq!(part.bytes, [rank as u8, round]);
                // Every rank's copy shares the file's offset: read at an offset.
                let theirs = std::fs::File::from(part.fds.into_iter().next().unwrap());
                let mut text = [0_u8; 6];
                theirs.read_exact_at(&mut text, 0).unwrap();
                seen.push(String::from_utf8(text.to_vec()).unwrap());
            }
        }
        group.barrier().unwrap();
        assert!(group.failure().is_none());
        seen
    });
    for rank in ranks {
        let seen = rank.join().unwrap();
        assert_eq!(seen[..4], ["rank 0", "rank 1", "rank 2", "rank 3"]);
    }
    assert!(
        std::fs::read_dir(directory("gather"))
            .unwrap()
            .next()
            .is_none(),
        "the socket is removed once the group met"
    );
}

#[test]
fn a_process_without_the_jobs_secret_is_refused_and_the_job_still_meets() {
    let secret = JobSecret::generate().unwrap();
    let intruder = JobSecret::generate().unwrap();
    let coordinator = on_threads("refuse", 2, [0], &secret, |group| group.barrier().unwrap());
    let refused = Rendezvous::new(1, 2, intruder)
        .directory(directory("refuse"))
        .job("refuse")
        .timeout(Duration::from_secs(20))
        .join()
        .unwrap_err();
    let message = refused.to_string();
    assert!(
        matches!(refused, ProcessGroupError::Refused { .. })
            && message.contains("job secret differs"),
        "{message}"
    );
    let wrong_size = Rendezvous::new(1, 3, secret.clone())
        .directory(directory("refuse"))
        .job("refuse")
        .join()
        .unwrap_err();
    assert!(
        wrong_size
            .to_string()
            .contains("group of 3, this job has 2"),
        "{wrong_size}"
    );
    let member = on_threads("refuse", 2, [1], &secret, |group| group.barrier().unwrap());
    for rank in coordinator.into_iter().chain(member) {
        rank.join().unwrap();
    }
}

#[test]
fn a_rank_nobody_joins_times_out_with_a_clear_error() {
    let error = Rendezvous::new(0, 2, JobSecret::generate().unwrap())
        .directory(directory("alone"))
        .timeout(Duration::from_millis(200))
        .join()
        .unwrap_err();
    assert!(
        matches!(error, ProcessGroupError::TimedOut { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("join"), "{error}");
}

/// Rank 1 of `a_killed_process_is_reported_to_every_other_within_a_second`: joins, says
/// it is ready, and waits to be killed. Does nothing unless that test started it.
#[test]
fn child_joins_then_is_killed() {
    if std::env::var_os("SSPG_CHILD").is_none() {
        return;
    }
    let group = Rendezvous::from_env()
        .unwrap()
        .timeout(Duration::from_secs(20))
        .join()
        .unwrap();
    group.barrier().unwrap();
    std::thread::sleep(Duration::from_secs(60));
    panic!("rank 1 was not killed");
}

#[test]
fn a_killed_process_is_reported_to_every_other_within_a_second() {
    let secret = JobSecret::generate().unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_joins_then_is_killed", "--nocapture"])
        .env("SSPG_CHILD", "1")
        .env("RANK", "1")
        .env("WORLD_SIZE", "3")
        .env(SECRET_VARIABLE, secret.to_hex())
        .env(DIRECTORY_VARIABLE, directory("killed"))
        .env(JOB_VARIABLE, "killed")
        .spawn()
        .unwrap();
    let (told, news) = mpsc::channel();
    let ranks = on_threads("killed", 3, [0, 2], &secret, move |group| {
        let told = told.clone();
        let _listener =
            group.on_failure(move |failure| told.send((failure, Instant::now())).unwrap());
        group.barrier().unwrap();
        // Blocks until the death ends it.
        let error = group.barrier().unwrap_err();
        (group.rank(), error.to_string(), group.failure())
    });
    // Both threads met the child at the first barrier; now it dies.
    std::thread::sleep(Duration::from_millis(100));
    child.kill().unwrap();
    let killed = Instant::now();
    child.wait().unwrap();
    for rank in ranks {
        let (rank, error, failure) = rank.join().unwrap();
        assert_eq!(failure, Some(PeerFailure::Died { rank: 1 }), "rank {rank}");
        assert!(error.contains("rank 1 ended"), "rank {rank}: {error}");
    }
    for _ in 0..2 {
        let (failure, at) = news.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(failure, PeerFailure::Died { rank: 1 });
        let after = at.saturating_duration_since(killed);
        assert!(
            after < Duration::from_secs(1),
            "learnt {after:?} after the kill"
        );
    }
}

#[test]
fn an_abort_reaches_every_rank_and_a_goodbye_is_no_failure() {
    let secret = JobSecret::generate().unwrap();
    let ranks = on_threads("abort", 3, 0..3, &secret, |group| {
        group.barrier().unwrap();
        if group.rank() == 1 {
            // Rank 0 may still be sending the barrier's answer to rank 2.
            std::thread::sleep(Duration::from_millis(50));
            group.abort();
        }
        let error = group.barrier().unwrap_err();
        (group.failure(), error.to_string())
    });
    for rank in ranks {
        let (failure, error) = rank.join().unwrap();
        assert_eq!(failure, Some(PeerFailure::Aborted { rank: 1 }));
        assert!(error.contains("GPU work failed"), "{error}");
    }
    let ranks = on_threads("leave", 2, 0..2, &secret, |group| {
        group.barrier().unwrap();
        if group.rank() == 1 {
            return None;
        }
        let error = group.barrier().unwrap_err();
        assert!(group.failure().is_none(), "a goodbye is no failure");
        Some(error.to_string())
    });
    let errors: Vec<_> = ranks.into_iter().map(|rank| rank.join().unwrap()).collect();
    let left = errors[0].as_deref().unwrap();
    assert!(left.contains("rank 1 left the group"), "{left}");
}

#[test]
fn processes_at_different_collectives_fail_the_call_in_every_process() {
    let secret = JobSecret::generate().unwrap();
    let ranks = on_threads("step", 3, 0..3, &secret, |group| {
        group.barrier().unwrap();
        let error = if group.rank() == 2 {
            group.all_gather(b"x", &[]).unwrap_err()
        } else {
            group.barrier().unwrap_err()
        };
        assert!(group.failure().is_none(), "a mismatch is no failure");
        // The group goes on once its processes agree again.
        group.barrier().unwrap();
        error.to_string()
    });
    for rank in ranks {
        let error = rank.join().unwrap();
        assert!(
            error.contains(
                "rank 0 calls barrier (its collective 2), rank 2 all_gather (its collective 2)"
            ),
            "{error}"
        );
    }
}

fn tempfile(name: &str) -> std::fs::File {
    let path = std::env::temp_dir().join(format!("sspg-{name}-{}", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    file
}
