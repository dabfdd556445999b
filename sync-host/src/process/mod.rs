//! Processes that work together, one GPU each (Linux): a [`ProcessGroup`] found through
//! a [`Rendezvous`] (the launcher's environment: `scoped-sync-run`, mpirun, torchrun or
//! srun), with the collectives the GPU objects need to span processes (an all-gather
//! that carries file descriptors, so each process can map the others' GPU memory) and a
//! watch on every other process: one that ends without leaving the group is reported
//! to every listener at once ([`ProcessGroup::on_failure`]).
//!
//! The group is a star of Unix sockets (`SOCK_SEQPACKET`) around rank 0, in a directory
//! only this user reaches, admitted by the job's secret ([`JobSecret`]). The kernel
//! closes a dead process's sockets, so its end is seen within a poll's wake-up, not
//! after a timeout.
//!
//! `sync_host::cuda::MultiGrid::join` builds the multi-GPU barrier on a group; its docs
//! show a whole program, and docs/multi-gpu.md ("One process per GPU") the recipes.

mod error;
mod rendezvous;
mod secret;
mod socket;
mod wire;

use std::collections::VecDeque;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use error::{PeerFailure, ProcessGroupError};
pub use rendezvous::{Rendezvous, DIRECTORY_VARIABLE, JOB_VARIABLE, SECRET_VARIABLE};
pub use secret::JobSecret;
use wire::{Kind, Message};

/// One process's part of a collective ([`ProcessGroup::all_gather`]).
#[derive(Debug)]
pub struct Contribution {
    /// The bytes it gave.
    pub bytes: Vec<u8>,
    /// The file descriptors it gave, now open in this process too.
    pub fds: Vec<OwnedFd>,
}

/// The processes of one job, each with its rank: collectives among them
/// ([`all_gather`](Self::all_gather), [`barrier`](Self::barrier)) and news of any that
/// fails ([`on_failure`](Self::on_failure)). Made by [`Rendezvous::join`]. Collectives
/// are called by every process in the same order, as MPI's are.
///
/// Cloning is cheap and shares the group; dropping the last clone leaves the group in
/// order (a goodbye to rank 0, or from rank 0 to every rank): the others do not take
/// it for a death.
///
/// Counterpart: an MPI communicator, or `torch.distributed`'s process group, with the
/// NCCL-style abort on a peer's failure built in.
#[derive(Clone)]
pub struct ProcessGroup {
    shared: Arc<Shared>,
    _membership: Arc<Membership>,
}

/// This process's place in the group: the watcher, and the goodbye when it ends.
struct Membership {
    shared: Arc<Shared>,
    /// Written to stop the watcher.
    stop: OwnedFd,
    watcher: Option<JoinHandle<()>>,
}

/// What the watcher thread and the collectives share.
struct Shared {
    rank: usize,
    size: usize,
    timeout: Duration,
    /// Collectives this process has called.
    steps: AtomicU64,
    /// Rank 0: a link to every other rank (`links[0]` absent); any other rank: its link
    /// to rank 0 at `links[0]`.
    links: Vec<Option<Link>>,
    state: Mutex<State>,
    changed: Condvar,
}

struct Link {
    socket: OwnedFd,
    /// One message at a time on the link (the watcher and a collective both send).
    sending: Mutex<()>,
}

/// A failure listener.
type Listener = Arc<dyn Fn(PeerFailure) + Send + Sync>;

#[derive(Default)]
struct State {
    /// Messages of collectives, by the rank of their link.
    inbox: Vec<VecDeque<Message>>,
    /// The group's first failure; every collective fails with it from then on.
    failure: Option<PeerFailure>,
    /// Ranks (of a link) that left in order.
    departed: Vec<bool>,
    listeners: Vec<(u64, Listener)>,
    next_listener: u64,
}

/// Unregisters its listener when dropped ([`ProcessGroup::on_failure`]).
#[must_use = "the listener is removed when this is dropped"]
pub struct FailureListener {
    shared: Arc<Shared>,
    id: u64,
}

impl Drop for FailureListener {
    fn drop(&mut self) {
        self.shared
            .lock()
            .listeners
            .retain(|(id, _)| *id != self.id);
    }
}

impl ProcessGroup {
    /// Starts the watcher over the links of a joined group.
    fn start(
        rank: usize,
        size: usize,
        timeout: Duration,
        links: Vec<Option<OwnedFd>>,
    ) -> Result<Self, ProcessGroupError> {
        let slots = links.len().max(1);
        let shared = Arc::new(Shared {
            rank,
            size,
            timeout,
            steps: AtomicU64::new(0),
            links: links
                .into_iter()
                .map(|socket| {
                    socket.map(|socket| Link {
                        socket,
                        sending: Mutex::new(()),
                    })
                })
                .collect(),
            state: Mutex::new(State {
                inbox: (0..slots).map(|_| VecDeque::new()).collect(),
                departed: vec![false; slots],
                ..State::default()
            }),
            changed: Condvar::new(),
        });
        // SAFETY: no pointers; a fresh descriptor on success.
        let stop = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if stop < 0 {
            return Err(
                ProcessGroupError::io("make the group watcher's stop event")(
                    std::io::Error::last_os_error(),
                ),
            );
        }
        // SAFETY: fresh and ours.
        let stop = unsafe { OwnedFd::from_raw_fd(stop) };
        let watched = stop
            .try_clone()
            .map_err(ProcessGroupError::io("share the stop event"))?;
        let watcher = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name(format!("process-group-{rank}"))
                .spawn(move || shared.watch(watched.as_fd()))
                .map_err(ProcessGroupError::io("start the group watcher"))?
        };
        Ok(Self {
            _membership: Arc::new(Membership {
                shared: Arc::clone(&shared),
                stop,
                watcher: Some(watcher),
            }),
            shared,
        })
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.shared.rank
    }

    /// Processes in the group.
    pub fn size(&self) -> usize {
        self.shared.size
    }

    /// The group's first failure, if a process failed.
    pub fn failure(&self) -> Option<PeerFailure> {
        self.shared.lock().failure
    }

    /// Every process's `bytes` and `fds` (at most 64 descriptors in all), by rank, its
    /// own included (its descriptors duplicated). Collective: called by every process,
    /// the group's collectives in the same order in each (a process at another
    /// collective fails the call everywhere with [`ProcessGroupError::Mismatch`]).
    ///
    /// # Errors
    ///
    /// [`ProcessGroupError::PeerFailed`] once a process failed (before or during the
    /// call), [`ProcessGroupError::PeerLeft`] if one left in order,
    /// [`ProcessGroupError::Mismatch`] if the processes are at different collectives
    /// (or give more than 64 descriptors in all),
    /// [`ProcessGroupError::TimedOut`] after the group's timeout, or a failed send.
    pub fn all_gather(
        &self,
        bytes: &[u8],
        fds: &[BorrowedFd<'_>],
    ) -> Result<Vec<Contribution>, ProcessGroupError> {
        self.all_gather_as("all_gather", bytes, fds)
    }

    /// [`all_gather`](Self::all_gather) as the collective named `what`: rank 0 checks
    /// that every process is at the same collective (the same name and the same count
    /// of collectives before it), and otherwise fails the call in every process with
    /// [`ProcessGroupError::Mismatch`] naming both, instead of pairing the parts of two
    /// different collectives.
    pub(crate) fn all_gather_as(
        &self,
        what: &str,
        bytes: &[u8],
        fds: &[BorrowedFd<'_>],
    ) -> Result<Vec<Contribution>, ProcessGroupError> {
        let own = || {
            Ok(Contribution {
                bytes: bytes.to_vec(),
                fds: fds
                    .iter()
                    .map(|fd| fd.try_clone_to_owned())
                    .collect::<Result<_, _>>()
                    .map_err(ProcessGroupError::io("duplicate a gathered descriptor"))?,
            })
        };
        if let Some(failure) = self.failure() {
            return Err(ProcessGroupError::PeerFailed(failure));
        }
        let step = Step {
            what: what.to_owned(),
            number: self.shared.steps.fetch_add(1, Ordering::Relaxed) + 1,
        };
        let deadline = Instant::now() + self.shared.timeout;
        if self.shared.size == 1 {
            return Ok(vec![own()?]);
        }
        if self.shared.rank != 0 {
            let mut payload = step.encode();
            payload.extend_from_slice(bytes);
            self.shared.send(0, Kind::Contribute, &payload, fds)?;
            let gathered = self.shared.next_message(0, deadline)?;
            return match gathered.kind {
                Kind::Gathered => unpack(&gathered.payload, gathered.fds, self.shared.size),
                Kind::OutOfStep => Err(ProcessGroupError::Mismatch {
                    what: String::from_utf8_lossy(&gathered.payload).into_owned(),
                }),
                other => Err(unexpected(other)),
            };
        }
        let mut parts = vec![own()?];
        let mut out_of_step = None;
        for rank in 1..self.shared.size {
            let part = self.shared.next_message(rank, deadline)?;
            if part.kind != Kind::Contribute {
                return Err(unexpected(part.kind));
            }
            let (theirs, bytes) =
                Step::decode(&part.payload).ok_or_else(|| ProcessGroupError::Io {
                    operation: "read a contribution",
                    error: wire::invalid("a contribution without its collective's name"),
                })?;
            if theirs != step && out_of_step.is_none() {
                out_of_step = Some(format!(
                    "collectives out of step: rank 0 calls {} (its collective {}), rank {rank} {} (its collective {})",
                    step.what, step.number, theirs.what, theirs.number
                ));
            }
            parts.push(Contribution {
                bytes: bytes.to_vec(),
                fds: part.fds,
            });
        }
        if let Some(what) = out_of_step {
            for rank in 1..self.shared.size {
                self.shared
                    .send(rank, Kind::OutOfStep, what.as_bytes(), &[])?;
            }
            return Err(ProcessGroupError::Mismatch { what });
        }
        let mut payload = Vec::new();
        for part in &parts {
            payload.extend_from_slice(&(part.bytes.len() as u32).to_le_bytes());
            payload.extend_from_slice(&(part.fds.len() as u32).to_le_bytes());
            payload.extend_from_slice(&part.bytes);
        }
        let all: Vec<BorrowedFd<'_>> = parts
            .iter()
            .flat_map(|part| part.fds.iter().map(AsFd::as_fd))
            .collect();
        if all.len() > wire::MAX_FDS {
            let what = format!(
                "{} descriptors in one all-gather, at most {}",
                all.len(),
                wire::MAX_FDS
            );
            for rank in 1..self.shared.size {
                self.shared
                    .send(rank, Kind::OutOfStep, what.as_bytes(), &[])?;
            }
            return Err(ProcessGroupError::Mismatch { what });
        }
        for rank in 1..self.shared.size {
            self.shared.send(rank, Kind::Gathered, &payload, &all)?;
        }
        Ok(parts)
    }

    /// Returns once every process called it. Collective.
    ///
    /// # Errors
    ///
    /// As [`all_gather`](Self::all_gather).
    pub fn barrier(&self) -> Result<(), ProcessGroupError> {
        self.all_gather_as("barrier", &[], &[]).map(drop)
    }

    /// Tells every process that this one's GPU work failed (its kernel trapped, say):
    /// each runs its failure listeners with [`PeerFailure::Aborted`], and every later
    /// collective fails, here too.
    pub fn abort(&self) {
        let failure = PeerFailure::Aborted {
            rank: self.shared.rank,
        };
        if self.shared.rank != 0 {
            let _ = self.shared.send(0, Kind::Abort, &[], &[]);
        }
        self.shared.fail(failure);
    }

    /// Runs `listener` on a thread of the group's (once, at the group's first failure:
    /// a process that ended without leaving, or an abort), or at once on this thread if
    /// the group failed already.
    /// Dropping the returned guard removes it.
    pub fn on_failure(
        &self,
        listener: impl Fn(PeerFailure) + Send + Sync + 'static,
    ) -> FailureListener {
        let listener: Listener = Arc::new(listener);
        let mut state = self.shared.lock();
        let id = state.next_listener;
        state.next_listener += 1;
        if let Some(failure) = state.failure {
            drop(state);
            listener(failure);
        } else {
            state.listeners.push((id, listener));
        }
        FailureListener {
            shared: Arc::clone(&self.shared),
            id,
        }
    }
}

impl Drop for Membership {
    fn drop(&mut self) {
        if self.shared.lock().failure.is_none() {
            for rank in 0..self.shared.links.len() {
                let _ = self.shared.send(rank, Kind::Goodbye, &[], &[]);
            }
        }
        let one = 1_u64.to_ne_bytes();
        // SAFETY: eight bytes to an eventfd.
        unsafe { libc::write(self.stop.as_raw_fd(), one.as_ptr().cast(), one.len()) };
        if let Some(watcher) = self.watcher.take() {
            let _ = watcher.join();
        }
    }
}

impl std::fmt::Debug for ProcessGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessGroup")
            .field("rank", &self.rank())
            .field("size", &self.size())
            .field("failure", &self.failure())
            .finish()
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn send(
        &self,
        rank: usize,
        kind: Kind,
        payload: &[u8],
        fds: &[BorrowedFd<'_>],
    ) -> Result<(), ProcessGroupError> {
        let Some(link) = self.links.get(rank).and_then(Option::as_ref) else {
            return Ok(());
        };
        let _one_at_a_time = link.sending.lock().unwrap_or_else(|p| p.into_inner());
        wire::send(link.socket.as_fd(), kind, payload, fds)
            .map_err(ProcessGroupError::io("send to a process of the group"))
    }

    /// The next collective message on `rank`'s link.
    fn next_message(&self, rank: usize, deadline: Instant) -> Result<Message, ProcessGroupError> {
        let mut state = self.lock();
        loop {
            // A message that arrived before the news of a failure still counts.
            if let Some(message) = state.inbox[rank].pop_front() {
                return Ok(message);
            }
            if let Some(failure) = state.failure {
                return Err(ProcessGroupError::PeerFailed(failure));
            }
            if state.departed[rank] {
                return Err(ProcessGroupError::PeerLeft { rank });
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ProcessGroupError::TimedOut {
                    operation: "a collective of the process group",
                    waited: self.timeout,
                });
            }
            state = self
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Records the group's first failure, tells every other rank (from rank 0), and
    /// runs the listeners.
    #[cold]
    fn fail(&self, failure: PeerFailure) {
        let listeners = {
            let mut state = self.lock();
            if state.failure.is_some() {
                return;
            }
            state.failure = Some(failure);
            self.changed.notify_all();
            std::mem::take(&mut state.listeners)
        };
        // The others first: a listener may take milliseconds (driver calls).
        if self.rank == 0 {
            let (rank, died) = match failure {
                PeerFailure::Died { rank } => (rank, 1_u32),
                PeerFailure::Aborted { rank } => (rank, 0),
            };
            let mut payload = (rank as u32).to_le_bytes().to_vec();
            payload.extend_from_slice(&died.to_le_bytes());
            for other in 1..self.links.len() {
                if other != rank {
                    let _ = self.send(other, Kind::Failed, &payload, &[]);
                }
            }
        }
        for (_, listener) in listeners {
            listener(failure);
        }
    }

    /// The watcher: reads every link, files collective messages, and turns the end of
    /// a link without a goodbye into the group's failure.
    fn watch(&self, stop: BorrowedFd<'_>) {
        let ranks: Vec<usize> = (0..self.links.len())
            .filter(|&rank| self.links[rank].is_some())
            .collect();
        let mut open = vec![true; ranks.len()];
        loop {
            let mut polls: Vec<libc::pollfd> = std::iter::once(stop.as_raw_fd())
                .chain(
                    ranks
                        .iter()
                        .zip(&open)
                        .filter(|(_, &open)| open)
                        .map(|(&rank, _)| {
                            self.links[rank]
                                .as_ref()
                                .expect("a link")
                                .socket
                                .as_raw_fd()
                        }),
                )
                .map(|fd| libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect();
            // SAFETY: `polls` is a valid array of its length.
            let ready = unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, -1) };
            if ready < 0 {
                continue;
            }
            if polls[0].revents != 0 {
                return;
            }
            let live: Vec<usize> = (0..ranks.len()).filter(|&i| open[i]).collect();
            for (poll, &i) in polls[1..].iter().zip(&live) {
                if poll.revents == 0 {
                    continue;
                }
                let rank = ranks[i];
                let link = self.links[rank].as_ref().expect("a link");
                match wire::receive(link.socket.as_fd()) {
                    Ok(Some(message)) => self.file(rank, message),
                    Ok(None) | Err(_) => {
                        open[i] = false;
                        let departed = self.lock().departed[rank];
                        if !departed {
                            self.fail(PeerFailure::Died { rank });
                        }
                        self.changed.notify_all();
                    }
                }
            }
            if !open.iter().any(|&open| open) {
                return;
            }
        }
    }

    /// Files one message from `rank`'s link.
    fn file(&self, rank: usize, message: Message) {
        match message.kind {
            Kind::Goodbye => {
                self.lock().departed[rank] = true;
                self.changed.notify_all();
            }
            Kind::Abort => self.fail(PeerFailure::Aborted { rank }),
            Kind::Failed if message.payload.len() == 8 => {
                let word = |i: usize| {
                    u32::from_le_bytes(message.payload[4 * i..4 * i + 4].try_into().expect("4"))
                };
                let rank = word(0) as usize;
                self.fail(if word(1) == 1 {
                    PeerFailure::Died { rank }
                } else {
                    PeerFailure::Aborted { rank }
                });
            }
            _ => {
                self.lock().inbox[rank].push_back(message);
                self.changed.notify_all();
            }
        }
    }
}

/// Which collective a contribution belongs to: its name and its number among the
/// process's collectives (1 for the first).
#[derive(Debug, PartialEq, Eq)]
struct Step {
    what: String,
    number: u64,
}

impl Step {
    /// The step as the head of a contribution: the number, the name's length, the name.
    fn encode(&self) -> Vec<u8> {
        let mut head = self.number.to_le_bytes().to_vec();
        head.extend_from_slice(&(self.what.len() as u32).to_le_bytes());
        head.extend_from_slice(self.what.as_bytes());
        head
    }

    /// The step at the head of `payload`, and the bytes after it.
    fn decode(payload: &[u8]) -> Option<(Self, &[u8])> {
        let number = u64::from_le_bytes(payload.get(..8)?.try_into().ok()?);
        let length = u32::from_le_bytes(payload.get(8..12)?.try_into().ok()?) as usize;
        let what = String::from_utf8_lossy(payload.get(12..12 + length)?).into_owned();
        Some((Self { what, number }, &payload[12 + length..]))
    }
}

/// Splits rank 0's gathered payload into every rank's contribution.
fn unpack(
    payload: &[u8],
    fds: Vec<OwnedFd>,
    size: usize,
) -> Result<Vec<Contribution>, ProcessGroupError> {
    let broken = || ProcessGroupError::Io {
        operation: "read a gathered message",
        error: wire::invalid("a gathered message that does not parse"),
    };
    let mut fds = fds.into_iter();
    let mut parts = Vec::with_capacity(size);
    let mut at = 0;
    for _ in 0..size {
        let word = |at: usize| -> Result<usize, ProcessGroupError> {
            let bytes = payload.get(at..at + 4).ok_or_else(broken)?;
            Ok(u32::from_le_bytes(bytes.try_into().expect("4")) as usize)
        };
        let (length, count) = (word(at)?, word(at + 4)?);
        let bytes = payload
            .get(at + 8..at + 8 + length)
            .ok_or_else(broken)?
            .to_vec();
        at += 8 + length;
        let taken: Vec<OwnedFd> = fds.by_ref().take(count).collect();
        if taken.len() != count {
            return Err(broken());
        }
        parts.push(Contribution { bytes, fds: taken });
    }
    Ok(parts)
}

fn unexpected(kind: Kind) -> ProcessGroupError {
    ProcessGroupError::Io {
        operation: "a collective of the process group",
        error: wire::invalid(&format!("a {kind:?} message where a collective's was due (are the collectives called in the same order?)")),
    }
}
