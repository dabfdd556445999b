//! How the processes of a job find each other: [`Rendezvous`] (ranks from the
//! launcher's environment, a socket in a directory only this user reaches) and the
//! [`JobSecret`] every process of the job must present.

use std::ffi::OsString;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::secret::JobSecret;
use super::socket::{peer_uid, socket, socket_address, wait_readable, RemoveOnDrop};
use super::wire::{self, Kind};
use super::{ProcessGroup, ProcessGroupError};

/// The variable that carries the job's secret (hex).
pub const SECRET_VARIABLE: &str = "SCOPED_SYNC_JOB_SECRET";
/// The variable that names the rendezvous directory (optional).
pub const DIRECTORY_VARIABLE: &str = "SCOPED_SYNC_RENDEZVOUS";
/// The variable that names the job (optional; the socket's name): else the launcher's
/// own job id (`SLURM_JOB_ID`, `PMIX_NAMESPACE`, `TORCHELASTIC_RUN_ID`), else a name
/// derived from the secret.
pub const JOB_VARIABLE: &str = "SCOPED_SYNC_JOB_ID";

/// Version of the handshake; a process of another version is refused.
const PROTOCOL: u32 = 1;

/// How long the coordinator waits for one joining process's hello once connected (a
/// process that connects and says nothing must not stall the job).
const HELLO_PATIENCE: Duration = Duration::from_secs(5);

/// Where and as whom one process joins its job's [`ProcessGroup`]: its rank, the
/// group's size, the job's secret, the rendezvous directory. Rank 0 is the
/// coordinator: it listens on a socket in the directory (made mode 0700 if missing,
/// refused if another user could reach it; the socket is mode 0600 and removed once
/// every rank joined) and admits each other rank that presents the job's secret.
///
/// Counterpart: `MPI_Init` with `MPI_Comm_rank`/`MPI_Comm_size`, or
/// `torch.distributed.init_process_group` with its `env://` rendezvous.
///
/// # Examples
///
/// Two processes of one job, here two threads of one test:
///
/// ```
/// use sync_host::process::{JobSecret, Rendezvous};
///
/// # if cfg!(miri) { return; } // sockets and directories are foreign to Miri
/// let secret = JobSecret::generate().unwrap();
/// let directory = std::env::temp_dir().join(format!("doc-rendezvous-{}", std::process::id()));
/// let join = |rank| {
///     let (secret, directory) = (secret.clone(), directory.clone());
///     std::thread::spawn(move || {
///         let group = Rendezvous::new(rank, 2, secret).directory(directory).join().unwrap();
///         let gathered = group.all_gather(&[rank as u8], &[]).unwrap();
///         assert_eq!(gathered.iter().map(|part| part.bytes[0]).collect::<Vec<_>>(), [0, 1]);
///     })
/// };
/// let (first, second) = (join(0), join(1));
/// first.join().unwrap();
/// second.join().unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct Rendezvous {
    rank: usize,
    size: usize,
    local_rank: usize,
    secret: JobSecret,
    job: String,
    directory: PathBuf,
    timeout: Duration,
}

impl Rendezvous {
    /// Rank `rank` of a group of `size` processes with the job's `secret`, meeting in
    /// the default directory (`$XDG_RUNTIME_DIR/scoped-sync`, else
    /// `/tmp/scoped-sync-<uid>`), with a 60 s timeout for joining and for each
    /// collective. Its local rank (the GPU it takes, by convention) is its rank.
    ///
    /// # Panics
    ///
    /// If `rank` is not below `size`.
    pub fn new(rank: usize, size: usize, secret: JobSecret) -> Self {
        assert!(
            rank < size,
            "Rendezvous::new: rank {rank} of a group of {size}"
        );
        Self {
            rank,
            size,
            local_rank: rank,
            job: secret.job_name(),
            secret,
            directory: default_directory(),
            timeout: Duration::from_secs(60),
        }
    }

    /// The rendezvous the launcher's environment describes: rank and size from
    /// `RANK`/`WORLD_SIZE` (torchrun, `scoped-sync-run`), `OMPI_COMM_WORLD_RANK`/`_SIZE`
    /// (Open MPI's mpirun), `PMI_RANK`/`PMI_SIZE` (MPICH) or `SLURM_PROCID`/`SLURM_NTASKS`,
    /// the local rank from `LOCAL_RANK`, `OMPI_COMM_WORLD_LOCAL_RANK`, `MPI_LOCALRANKID`
    /// or `SLURM_LOCALID` (else the rank), the secret from [`SECRET_VARIABLE`], the
    /// directory from [`DIRECTORY_VARIABLE`] if set.
    ///
    /// # Errors
    ///
    /// [`ProcessGroupError::Environment`] naming the variable that is missing or does
    /// not parse, and how to set it.
    pub fn from_env() -> Result<Self, ProcessGroupError> {
        Self::from_lookup(|name| std::env::var_os(name))
    }

    /// [`from_env`](Self::from_env) over any lookup (tests).
    pub(super) fn from_lookup(
        lookup: impl Fn(&str) -> Option<OsString>,
    ) -> Result<Self, ProcessGroupError> {
        let number = |names: &[&'static str], variable: &'static str| {
            let Some((name, value)) = names
                .iter()
                .find_map(|&name| lookup(name).map(|value| (name, value)))
            else {
                return Ok(None);
            };
            value
                .to_str()
                .and_then(|value| value.trim().parse::<usize>().ok())
                .map(Some)
                .ok_or_else(|| ProcessGroupError::Environment {
                    variable,
                    problem: format!("{name} = {value:?} is not a number"),
                })
        };
        const RANK: &str = "RANK (or OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID)";
        const SIZE: &str = "WORLD_SIZE (or OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_NTASKS)";
        const LOCAL: &str =
            "LOCAL_RANK (or OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID)";
        let missing = |variable| ProcessGroupError::Environment {
            variable,
            problem: "not set: start the processes with scoped-sync-run, mpirun, torchrun or srun"
                .into(),
        };
        let rank = number(
            &["RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"],
            RANK,
        )?
        .ok_or_else(|| missing(RANK))?;
        let size = number(
            &[
                "WORLD_SIZE",
                "OMPI_COMM_WORLD_SIZE",
                "PMI_SIZE",
                "SLURM_NTASKS",
            ],
            SIZE,
        )?
        .ok_or_else(|| missing(SIZE))?;
        let local_rank = number(
            &[
                "LOCAL_RANK",
                "OMPI_COMM_WORLD_LOCAL_RANK",
                "MPI_LOCALRANKID",
                "SLURM_LOCALID",
            ],
            LOCAL,
        )?
        .unwrap_or(rank);
        if rank >= size {
            return Err(ProcessGroupError::Environment {
                variable: RANK,
                problem: format!("rank {rank} is not below the group's size {size}"),
            });
        }
        let secret = lookup(SECRET_VARIABLE).ok_or_else(|| ProcessGroupError::Environment {
            variable: SECRET_VARIABLE,
            problem: "not set: scoped-sync-run sets it; under mpirun pass one to every \
                      process, e.g. `mpirun -x SCOPED_SYNC_JOB_SECRET=$(openssl rand -hex 32) ...`"
                .into(),
        })?;
        let secret = secret
            .to_str()
            .ok_or_else(|| "not UTF-8".to_owned())
            .and_then(JobSecret::from_hex)
            .map_err(|problem| ProcessGroupError::Environment {
                variable: SECRET_VARIABLE,
                problem,
            })?;
        let mut rendezvous = Self::new(rank, size, secret);
        rendezvous.local_rank = local_rank;
        if let Some(directory) = lookup(DIRECTORY_VARIABLE) {
            rendezvous.directory = PathBuf::from(directory);
        }
        let slurm_step = || {
            let job = lookup("SLURM_JOB_ID")?;
            let step = lookup("SLURM_STEP_ID").unwrap_or_default();
            Some(format!("{}.{}", job.to_string_lossy(), step.to_string_lossy()).into())
        };
        let job = lookup(JOB_VARIABLE)
            .or_else(slurm_step)
            .or_else(|| lookup("PMIX_NAMESPACE"))
            .or_else(|| lookup("TORCHELASTIC_RUN_ID"));
        if let Some(job) = job {
            rendezvous = rendezvous.job(&job.to_string_lossy());
        }
        Ok(rendezvous)
    }

    /// Meets in `directory` instead (created mode 0700 if missing).
    #[must_use]
    pub fn directory(mut self, directory: impl Into<PathBuf>) -> Self {
        self.directory = directory.into();
        self
    }

    /// Names the job (the socket's name in the directory; by default one derived from
    /// the secret). Every process of the job gives the same; a process that gives
    /// another never meets the job, one that gives the same with another secret is
    /// refused. Characters other than letters, digits, `.`, `_` and `-` become `_`.
    #[must_use]
    pub fn job(mut self, name: &str) -> Self {
        self.job = name
            .chars()
            .take(48)
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        self
    }

    /// Gives up joining, and each later collective, after `timeout` (60 s unless set).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Processes in the group.
    pub fn size(&self) -> usize {
        self.size
    }

    /// This process's rank among those of its machine (the GPU ordinal it takes, by
    /// the launchers' convention).
    pub fn local_rank(&self) -> usize {
        self.local_rank
    }

    /// Joins the group: rank 0 waits until every other rank joined, each other rank
    /// until rank 0 admitted it. Collective.
    ///
    /// # Errors
    ///
    /// [`ProcessGroupError::InsecureDirectory`] if the directory is reachable by
    /// others; [`ProcessGroupError::Refused`] if rank 0 refused this process (its
    /// reason: another secret, another size, a rank taken); [`ProcessGroupError::TimedOut`]
    /// if the group did not meet in time; [`ProcessGroupError::Io`] for a failed system
    /// call.
    pub fn join(self) -> Result<ProcessGroup, ProcessGroupError> {
        private_directory(&self.directory)?;
        let path = self.directory.join(format!("job-{}.sock", self.job));
        let deadline = Instant::now() + self.timeout;
        let links = if self.size == 1 {
            Vec::new()
        } else if self.rank == 0 {
            self.admit_every_rank(&path, deadline)?
        } else {
            vec![Some(self.connect(&path, deadline)?)]
        };
        ProcessGroup::start(self.rank, self.size, self.timeout, links)
    }

    /// Rank 0: listens at `path` and admits one link per other rank (`links[0]`, its
    /// own, is absent).
    fn admit_every_rank(
        &self,
        path: &Path,
        deadline: Instant,
    ) -> Result<Vec<Option<OwnedFd>>, ProcessGroupError> {
        let listener = socket()?;
        // A socket file of an earlier run of the same job: nobody listens there.
        let _ = std::fs::remove_file(path);
        let address = socket_address(path)?;
        // SAFETY: `address` is a filled `sockaddr_un` of its own size.
        let bound = unsafe {
            libc::bind(
                listener.as_raw_fd(),
                std::ptr::addr_of!(address).cast(),
                std::mem::size_of_val(&address) as u32,
            )
        };
        if bound != 0 {
            return Err(ProcessGroupError::io("bind the rendezvous socket")(
                std::io::Error::last_os_error(),
            ));
        }
        let _remove = RemoveOnDrop(path);
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(ProcessGroupError::io("make the rendezvous socket private"))?;
        // SAFETY: a bound socket.
        if unsafe { libc::listen(listener.as_raw_fd(), 128) } != 0 {
            return Err(ProcessGroupError::io("listen on the rendezvous socket")(
                std::io::Error::last_os_error(),
            ));
        }
        let mut links: Vec<Option<OwnedFd>> = (0..self.size).map(|_| None).collect();
        while links.iter().skip(1).any(Option::is_none) {
            if !wait_readable(listener.as_fd(), deadline)? {
                let joined = links.iter().skip(1).filter(|link| link.is_some()).count();
                return Err(ProcessGroupError::TimedOut {
                    operation: if joined == 0 {
                        "wait for the group's other ranks to join"
                    } else {
                        "wait for the group's last ranks to join"
                    },
                    waited: self.timeout,
                });
            }
            // SAFETY: a listening socket; no address wanted.
            let accepted = unsafe {
                libc::accept4(
                    listener.as_raw_fd(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    libc::SOCK_CLOEXEC,
                )
            };
            if accepted < 0 {
                continue;
            }
            // SAFETY: a fresh descriptor from accept4.
            let link = unsafe { OwnedFd::from_raw_fd(accepted) };
            match self.admit(&link, &links, deadline.min(Instant::now() + HELLO_PATIENCE)) {
                Ok(rank) => {
                    wire::send(link.as_fd(), Kind::Welcome, &[], &[])
                        .map_err(ProcessGroupError::io("welcome a rank"))?;
                    links[rank] = Some(link);
                }
                Err(reason) => {
                    // The refused process learns why; the job goes on waiting.
                    let _ = wire::send(link.as_fd(), Kind::Refused, reason.as_bytes(), &[]);
                }
            }
        }
        Ok(links)
    }

    /// The rank a joining process may take, or why it may not.
    fn admit(
        &self,
        link: &OwnedFd,
        links: &[Option<OwnedFd>],
        deadline: Instant,
    ) -> Result<usize, String> {
        // SAFETY: geteuid cannot fail.
        let own_uid = unsafe { libc::geteuid() };
        match peer_uid(link) {
            Some(uid) if uid == own_uid => {}
            uid => return Err(format!("it runs as user {uid:?}, the job as {own_uid}")),
        }
        if !wait_readable(link.as_fd(), deadline).unwrap_or(false) {
            return Err("it said nothing in time".into());
        }
        let hello = match wire::receive(link.as_fd()) {
            Ok(Some(message)) if message.kind == Kind::Hello && message.payload.len() >= 12 => {
                message.payload
            }
            _ => return Err("it did not say hello as a scoped-sync process does".into()),
        };
        let word = |i: usize| u32::from_le_bytes(hello[4 * i..4 * i + 4].try_into().expect("4"));
        let (protocol, rank, size) = (word(0), word(1) as usize, word(2) as usize);
        if protocol != PROTOCOL {
            return Err(format!(
                "it speaks protocol {protocol}, this job {PROTOCOL} (another scoped-sync version)"
            ));
        }
        if !self.secret.matches(&hello[12..]) {
            return Err(format!(
                "its job secret differs from this job's ({SECRET_VARIABLE}): it belongs to another job"
            ));
        }
        if size != self.size {
            return Err(format!(
                "it joins a group of {size}, this job has {}",
                self.size
            ));
        }
        if rank == 0 || rank >= size {
            return Err(format!("rank {rank} is not one of 1 to {}", size - 1));
        }
        if links[rank].is_some() {
            return Err(format!("rank {rank} joined already"));
        }
        Ok(rank)
    }

    /// Any other rank: connects to rank 0 (retrying until it listens) and says hello.
    fn connect(&self, path: &Path, deadline: Instant) -> Result<OwnedFd, ProcessGroupError> {
        let address = socket_address(path)?;
        let link = loop {
            let link = socket()?;
            // SAFETY: `address` is a filled `sockaddr_un` of its own size.
            let connected = unsafe {
                libc::connect(
                    link.as_raw_fd(),
                    std::ptr::addr_of!(address).cast(),
                    std::mem::size_of_val(&address) as u32,
                )
            };
            if connected == 0 {
                break link;
            }
            if Instant::now() >= deadline {
                return Err(ProcessGroupError::TimedOut {
                    operation: "connect to the group's rank 0",
                    waited: self.timeout,
                });
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let mut hello = Vec::with_capacity(12 + self.secret.0.len());
        for word in [PROTOCOL, self.rank as u32, self.size as u32] {
            hello.extend_from_slice(&word.to_le_bytes());
        }
        hello.extend_from_slice(&self.secret.0);
        wire::send(link.as_fd(), Kind::Hello, &hello, &[])
            .map_err(ProcessGroupError::io("say hello to rank 0"))?;
        if !wait_readable(link.as_fd(), deadline)? {
            return Err(ProcessGroupError::TimedOut {
                operation: "wait for rank 0 to admit this process",
                waited: self.timeout,
            });
        }
        match wire::receive(link.as_fd()) {
            Ok(Some(message)) if message.kind == Kind::Welcome => Ok(link),
            Ok(Some(message)) if message.kind == Kind::Refused => Err(ProcessGroupError::Refused {
                reason: String::from_utf8_lossy(&message.payload).into_owned(),
            }),
            Ok(_) => Err(ProcessGroupError::Refused {
                reason: "it closed the connection without an answer".into(),
            }),
            Err(error) => Err(ProcessGroupError::io("read rank 0's answer")(error)),
        }
    }
}

/// `$XDG_RUNTIME_DIR/scoped-sync` (a per-user directory the system made private), else
/// `<temp>/scoped-sync-<uid>`.
fn default_directory() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(runtime) if Path::new(&runtime).is_dir() => Path::new(&runtime).join("scoped-sync"),
        // SAFETY: geteuid cannot fail.
        _ => std::env::temp_dir().join(format!("scoped-sync-{}", unsafe { libc::geteuid() })),
    }
}

/// Makes `directory` (mode 0700) if missing, then checks that it is a directory of this
/// user that no other user may enter.
pub(super) fn private_directory(directory: &Path) -> Result<(), ProcessGroupError> {
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(directory)
    {
        Ok(()) => {}
        Err(error) => {
            return Err(ProcessGroupError::io("make the rendezvous directory")(
                error,
            ));
        }
    }
    let insecure = |problem: String| ProcessGroupError::InsecureDirectory {
        path: directory.to_owned(),
        problem,
    };
    let metadata = std::fs::symlink_metadata(directory)
        .map_err(ProcessGroupError::io("read the rendezvous directory"))?;
    // SAFETY: geteuid cannot fail.
    let uid = unsafe { libc::geteuid() };
    if !metadata.is_dir() {
        return Err(insecure("not a directory (a symbolic link?)".into()));
    }
    if metadata.uid() != uid {
        return Err(insecure(format!(
            "owned by user {}, not {uid}",
            metadata.uid()
        )));
    }
    if metadata.mode() & 0o077 != 0 {
        return Err(insecure(format!(
            "mode {:o}: other users may enter it; chmod 700 it",
            metadata.mode() & 0o777
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn environment(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|&(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        move |name| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.into())
    }

    const SECRET: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

    #[test]
    fn the_launchers_variables_give_rank_size_and_local_rank() {
        let torchrun = Rendezvous::from_lookup(environment(&[
            ("RANK", "3"),
            ("WORLD_SIZE", "4"),
            ("LOCAL_RANK", "1"),
            (SECRET_VARIABLE, SECRET),
        ]))
        .unwrap();
        assert_eq!(
            (torchrun.rank(), torchrun.size(), torchrun.local_rank()),
            (3, 4, 1)
        );
        let mpirun = Rendezvous::from_lookup(environment(&[
            ("OMPI_COMM_WORLD_RANK", "2"),
            ("OMPI_COMM_WORLD_SIZE", "8"),
            (SECRET_VARIABLE, SECRET),
            (DIRECTORY_VARIABLE, "/run/job"),
        ]))
        .unwrap();
        assert_eq!(
            (mpirun.rank(), mpirun.size(), mpirun.local_rank()),
            (2, 8, 2)
        );
        assert_eq!(mpirun.directory, Path::new("/run/job"));
        assert_eq!(mpirun.job, JobSecret::from_hex(SECRET).unwrap().job_name());
        let slurm = Rendezvous::from_lookup(environment(&[
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "2"),
            ("SLURM_JOB_ID", "77"),
            ("SLURM_STEP_ID", "1"),
            (SECRET_VARIABLE, SECRET),
        ]))
        .unwrap();
        assert_eq!(slurm.job, "77.1");
        let named = Rendezvous::from_lookup(environment(&[
            ("RANK", "0"),
            ("WORLD_SIZE", "2"),
            (JOB_VARIABLE, "my job/1"),
            (SECRET_VARIABLE, SECRET),
        ]))
        .unwrap();
        assert_eq!(named.job, "my_job_1");
    }

    #[test]
    fn a_missing_or_bad_variable_is_named() {
        let error = |pairs: &[(&str, &str)]| {
            Rendezvous::from_lookup(environment(pairs))
                .unwrap_err()
                .to_string()
        };
        assert!(error(&[("WORLD_SIZE", "2")]).starts_with("RANK"));
        assert!(error(&[("RANK", "x"), ("WORLD_SIZE", "2")]).contains("\"x\" is not a number"));
        assert!(error(&[("RANK", "2"), ("WORLD_SIZE", "2")]).contains("not below"));
        let no_secret = error(&[("RANK", "0"), ("WORLD_SIZE", "2")]);
        assert!(
            no_secret.starts_with(SECRET_VARIABLE) && no_secret.contains("mpirun -x"),
            "{no_secret}"
        );
        let short = error(&[
            ("RANK", "0"),
            ("WORLD_SIZE", "2"),
            (SECRET_VARIABLE, "abcd"),
        ]);
        assert!(short.contains("32 to 128 hex digits"), "{short}");
    }

    #[test]
    #[cfg_attr(miri, ignore = "makes a directory, which Miri's isolation refuses")]
    fn a_directory_other_users_may_enter_is_refused() {
        let directory = std::env::temp_dir().join(format!("sspg-open-{}", std::process::id()));
        private_directory(&directory).unwrap();
        std::fs::set_permissions(&directory, std::fs::Permissions::from_mode(0o755)).unwrap();
        let error = private_directory(&directory).unwrap_err();
        assert!(
            matches!(error, ProcessGroupError::InsecureDirectory { .. }),
            "{error}"
        );
        assert!(error.to_string().contains("mode 755"), "{error}");
        std::fs::remove_dir(&directory).unwrap();
    }
}
