//! Where a run's guests come from: a boot, a boot that is saved as a
//! checkpoint, or a restore ([`Start`]); and the save itself.

use std::path::{Path, PathBuf};
use std::time::Instant;

use tokio::sync::mpsc;

use super::args::{Args, Mode, GUEST_BOOT_MIB, GUEST_WORK_MIB};
use super::error::{io, QemuError};
use super::launch::{
    check_image, kernel_file, plugin_path, qemu_version, qmp_socket, shared_root, IMAGE_FILES,
};
use super::outcome::{BridgeEvent, CheckpointUse, GuestReport};
use super::roi::RegionCheckpoint;
use crate::checkpoint::{self, FileStamp, Found, Identity, Manifest, RegionIdentity, SavedRegion};

/// The identity of the guests that `a` boots: what a checkpoint must have
/// been booted with to be restored for `a` ([`checkpoint::Identity`]);
/// for a checkpoint at the region's start (`a.region_checkpoint`), with
/// the command whose launch it holds.
///
/// # Errors
/// [`QemuError::ImageIncomplete`], [`QemuError::PluginMissing`] or
/// [`QemuError::Io`] when an image file, the
/// plugin, `--share`'s directory or QEMU is missing.
pub fn identity(a: &Args) -> Result<Identity, QemuError> {
    check_image(&a.image())?;
    let stamp = |p: &Path| io(FileStamp::of(p), || format!("cannot read {}", p.display()));
    let mut files = vec![
        stamp(&kernel_file(&a.image()))?,
        stamp(&a.image().join(IMAGE_FILES[1]))?,
    ];
    if let Some((root, _)) = shared_root(&a.image())? {
        files.push(stamp(&root)?);
    }
    files.push(stamp(&plugin_path(a)?)?);
    let share = match &a.guest.share {
        Some(d) => Some(io(FileStamp::tree(d), || {
            format!("cannot read --share {}", d.display())
        })?),
        None => None,
    };
    Ok(Identity {
        qemu: qemu_version(&a.qemu)?,
        files,
        share,
        guests: a.guest.guests,
        first_node: a.first_node,
        memory_mb: a.memory_mb(),
        cpus: a.guest.cpus,
        icount_shift: a.guest.icount_shift,
        pings: a.pings(),
        ping_bytes: a.guest.ping_bytes,
        bench_bytes: a.guest.bench_bytes,
        app_timeout: a.guest.app_timeout,
        magic: a.magic,
        region: match (&a.region_checkpoint, a.guest_command()) {
            (Some(_), Some(command)) => Some(RegionIdentity {
                roi: a.roi().library_word().unwrap_or("command").into(),
                command,
            }),
            _ => None,
        },
    })
}

/// Where a run's guests come from.
pub(super) enum Start {
    /// They boot.
    Boot,
    /// They boot and are saved in the directory (identity given), then
    /// the run ends.
    Save(PathBuf, Box<Identity>),
    /// They are restored from the checkpoint in the directory.
    Restore(PathBuf, Box<Manifest>),
}

/// Host disk the guests of `a` take at most when saved, MiB: each
/// guest's migration file holds the guest RAM it has touched
/// ([`GUEST_BOOT_MIB`] + [`GUEST_WORK_MIB`], at most its RAM); pages that
/// stayed zero are not written.
fn checkpoint_mib(a: &Args) -> u64 {
    u64::from(a.guest.guests) * u64::from(a.memory_mb()).min(GUEST_BOOT_MIB + GUEST_WORK_MIB)
}

/// What `--checkpoint` makes of this run: a restore when its directory
/// holds a checkpoint of this identity, else a boot that saves one (the
/// directory made ready and checked for room first, then
/// [`BridgeEvent::Booting`] handed to `watch`).
///
/// # Errors
/// [`QemuError::Needs`] without lock-step or --run, [`QemuError::NoRoom`]
/// when the directory's file system has no room for the guests' files.
pub(super) fn start_of(a: &Args, watch: &(dyn Fn(BridgeEvent) + Sync)) -> Result<Start, QemuError> {
    let Some(dir) = &a.checkpoint else {
        return Ok(Start::Boot);
    };
    if a.guest.timing != Mode::Lockstep || a.run.is_none() {
        return Err(QemuError::Needs {
            option: "--checkpoint",
            needs: "--timing lockstep and --run (the command each restored run runs)".into(),
        });
    }
    let mut boot = a.clone();
    if boot.region_checkpoint != Some(RegionCheckpoint::Restore) {
        boot.region_checkpoint = None;
    }
    let id = identity(&boot)?;
    let why = match checkpoint::find(dir, &id) {
        Found::Ready(m) => return Ok(Start::Restore(dir.clone(), m)),
        Found::Missing(why) if id.region.is_some() => {
            return Err(QemuError::Needs {
                option: "--roi with a checkpoint at the region's start",
                needs: why,
            })
        }
        Found::Missing(why) => why,
    };
    let need_mib = ready_to_save(a, dir)?;
    watch(BridgeEvent::Booting { why, need_mib });
    Ok(Start::Save(dir.clone(), Box::new(id)))
}

/// Makes `dir` ready for a checkpoint of the guests of `a`
/// ([`checkpoint::prepare`]) and checks that its file system has room for
/// their files; the MiB they may take.
///
/// # Errors
/// [`QemuError::NoRoom`] when there is no room, [`QemuError::Io`] when
/// `dir` cannot be made or queried.
pub(super) fn ready_to_save(a: &Args, dir: &Path) -> Result<u64, QemuError> {
    io(checkpoint::prepare(dir), || {
        format!("cannot make the checkpoint directory {}", dir.display())
    })?;
    let need_mib = checkpoint_mib(a);
    let free_mib = io(checkpoint::free_bytes(dir), || {
        format!("cannot query the file system of {}", dir.display())
    })? >> 20;
    if free_mib < need_mib {
        return Err(QemuError::NoRoom {
            dir: dir.to_path_buf(),
            guests: a.guest.guests,
            need_mib,
            free_mib,
        });
    }
    Ok(need_mib)
}

/// Saves every guest, paused at guest time `base_ns` by the board, in
/// `dir` (at most [`SAVING_AT_ONCE`] at a time), then writes the manifest
/// of identity `id` with their `reports` (and, at a region's start, the
/// ranks that wait); each QEMU quits once saved.
///
/// # Errors
/// [`QemuError::Guest`] naming the guest whose save failed.
pub(super) async fn save_guests(
    dir: &Path,
    id: &Identity,
    work: &Path,
    base_ns: u64,
    reports: &[GuestReport],
    boot_wall_s: f64,
    region: Option<SavedRegion>,
) -> Result<Manifest, QemuError> {
    let started = Instant::now();
    let (work, into) = (work.to_path_buf(), dir.to_path_buf());
    let mut saves = per_guest(reports.len(), move |i| {
        checkpoint::save_guest(&qmp_socket(&work, i), &checkpoint::guest_file(&into, i))
    });
    let mut bytes = 0;
    while let Some((i, r)) = saves.recv().await {
        bytes += r.map_err(|e| {
            QemuError::Guest(format!(
                "guest {i} could not be saved in {}: {e}",
                dir.display()
            ))
        })?;
    }
    let m = Manifest {
        format: checkpoint::FORMAT,
        identity: id.clone(),
        base_ns,
        reports: reports.to_vec(),
        boot_wall_s,
        save_wall_s: started.elapsed().as_secs_f64(),
        bytes,
        region,
    };
    io(checkpoint::write_manifest(dir, &m), || {
        format!(
            "cannot write the checkpoint's manifest in {}",
            dir.display()
        )
    })?;
    Ok(m)
}

/// Guests saved, or restored, at the same time: each QEMU writes or reads
/// its file from its own thread, and the disk is shared.
pub(super) const SAVING_AT_ONCE: usize = 4;

/// Runs `job(i)` for every guest `i` of `n` on blocking threads (QMP
/// sessions), at most [`SAVING_AT_ONCE`] at a time; each result, with its
/// guest, as it ends.
pub(super) fn per_guest<T: Send + 'static>(
    n: usize,
    job: impl Fn(usize) -> Result<T, checkpoint::MigrationError> + Send + Sync + 'static,
) -> mpsc::UnboundedReceiver<(usize, Result<T, checkpoint::MigrationError>)> {
    let (done, results) = mpsc::unbounded_channel();
    let job = std::sync::Arc::new(job);
    let limit = std::sync::Arc::new(tokio::sync::Semaphore::new(SAVING_AT_ONCE));
    for i in 0..n {
        let (job, limit, done) = (
            std::sync::Arc::clone(&job),
            std::sync::Arc::clone(&limit),
            done.clone(),
        );
        tokio::spawn(async move {
            let _turn = limit.acquire_owned().await;
            let r = tokio::task::spawn_blocking(move || job(i))
                .await
                .unwrap_or_else(|e| Err(checkpoint::MigrationError::Task(e.to_string())));
            let _ = done.send((i, r));
        });
    }
    results
}

impl CheckpointUse {
    /// The use of the checkpoint `m` in `dir`: saved (or restored) in
    /// `wall_s` seconds.
    pub(super) fn of(dir: &Path, m: &Manifest, saved: bool, wall_s: f64) -> CheckpointUse {
        CheckpointUse {
            dir: dir.to_path_buf(),
            saved,
            wall_s,
            guest_s: m.base_ns as f64 * 1e-9,
            bytes: m.bytes,
        }
    }
}
