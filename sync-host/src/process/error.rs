//! [`ProcessGroupError`]: why a process could not join its group, or why a
//! collective of the group failed.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// How a process of the group failed, as the others learn it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerFailure {
    /// Its end of the group's link closed without a goodbye: the process ended (killed,
    /// crashed, or it exited without dropping its `ProcessGroup`).
    Died {
        /// The rank of the process.
        rank: usize,
    },
    /// It reported that its GPU work failed ([`ProcessGroup::abort`](super::ProcessGroup::abort)):
    /// its kernel trapped, say.
    Aborted {
        /// The rank of the process.
        rank: usize,
    },
}

impl PeerFailure {
    /// The rank of the process that failed.
    pub fn rank(&self) -> usize {
        match *self {
            Self::Died { rank } | Self::Aborted { rank } => rank,
        }
    }
}

impl fmt::Display for PeerFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Died { rank } => {
                write!(f, "process of rank {rank} ended without leaving the group")
            }
            Self::Aborted { rank } => write!(
                f,
                "process of rank {rank} reported that its GPU work failed"
            ),
        }
    }
}

/// Why a process could not join its group, or a collective failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum ProcessGroupError {
    /// The launcher's environment lacks a variable, or holds one that does not parse.
    Environment {
        /// The variable (or the alternatives read).
        variable: &'static str,
        /// What is wrong, and how to set it.
        problem: String,
    },
    /// The rendezvous directory could be reached by other users (or is not a directory
    /// of this user): the group refuses to meet there.
    InsecureDirectory {
        /// The directory.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// The coordinator (rank 0) refused this process: another job secret, another group
    /// size, a rank taken or out of range.
    Refused {
        /// The coordinator's reason.
        reason: String,
    },
    /// The group did not meet within its timeout.
    TimedOut {
        /// What was waited for.
        operation: &'static str,
        /// How long.
        waited: Duration,
    },
    /// A process of the group failed; every later collective fails with this too.
    PeerFailed(PeerFailure),
    /// A process left the group in order before a collective this process is in.
    PeerLeft {
        /// Its rank.
        rank: usize,
    },
    /// The processes' parts of a collective do not agree (the MultiGrid launches of two
    /// ranks differ in shape, say).
    Mismatch {
        /// What differs.
        what: String,
    },
    /// A system call on the group's sockets or directory failed.
    Io {
        /// What we were doing.
        operation: &'static str,
        /// The error.
        error: std::io::Error,
    },
}

impl ProcessGroupError {
    pub(super) fn io(operation: &'static str) -> impl FnOnce(std::io::Error) -> Self {
        move |error| Self::Io { operation, error }
    }
}

impl fmt::Display for ProcessGroupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Environment { variable, problem } => write!(f, "{variable}: {problem}"),
            Self::InsecureDirectory { path, problem } => write!(
                f,
                "the rendezvous directory {} is not private to this user ({problem}); \
                 name another with SCOPED_SYNC_RENDEZVOUS",
                path.display()
            ),
            Self::Refused { reason } => {
                write!(f, "the group's rank 0 refused this process: {reason}")
            }
            Self::TimedOut { operation, waited } => write!(
                f,
                "{operation}: the group's processes did not all take part within {waited:?}"
            ),
            Self::PeerFailed(failure) => write!(f, "the process group failed: {failure}"),
            Self::PeerLeft { rank } => write!(
                f,
                "process of rank {rank} left the group before this collective"
            ),
            Self::Mismatch { what } => write!(f, "the processes disagree: {what}"),
            Self::Io { operation, error } => write!(f, "{operation}: {error}"),
        }
    }
}

impl std::error::Error for ProcessGroupError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { error, .. } => Some(error),
            _ => None,
        }
    }
}
