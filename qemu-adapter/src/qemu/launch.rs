//! A guest's QEMU command line and the files it boots from: the image
//! (kernel, initramfs, shared root), the plugin, guest 0's command file,
//! `--share`'s snapshot and the run's own directory.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::process::Command;

use super::args::{default_image_dir, guest_ip, guest_mac, Args, TCG_CODE_MIB};
use super::error::{io, QemuError};

/// One guest's QEMU command line; `sync` is the plugin's socket in
/// lock-step mode (with the slice board in `files`), `run` the file with
/// the `--run` command (guest 0 gets it as the fw_cfg file `opt/fsin/run`).
pub(super) fn qemu_command(
    a: &Args,
    index: u32,
    port: u16,
    sync: Option<&Path>,
    files: &RunFiles,
) -> Result<Command, QemuError> {
    let (append, memory) = kernel_line(a, index, files);
    let pmems: Vec<&(PathBuf, u64)> = files.root.iter().chain(&files.share).collect();
    let mac = guest_mac(a.first_node + index)
        .map(|b| format!("{b:02x}"))
        .join(":");
    let mut cmd = Command::new(&a.qemu);
    cmd.args(["-M", "pc", "-m", &memory])
        .args(["-accel", &format!("tcg,tb-size={TCG_CODE_MIB}")])
        .args(["-smp", &a.guest.cpus.to_string()])
        .args([
            "-nodefaults",
            "-no-user-config",
            "-display",
            "none",
            "-no-reboot",
        ])
        .args(["-serial", "stdio", "-monitor", "none"])
        .arg("-kernel")
        .arg(&files.kernel)
        .arg("-initrd")
        .arg(a.image().join("initramfs.cpio.gz"))
        .args(["-append", &append])
        .args([
            "-netdev",
            &format!("stream,id=n0,server=off,addr.type=inet,addr.host=127.0.0.1,addr.port={port}"),
        ])
        .args(["-device", &format!("e1000,netdev=n0,mac={mac},romfile=")]);
    for (k, (path, bytes)) in pmems.iter().enumerate() {
        // Read-only and shared: every guest maps the same host pages.
        cmd.args([
            "-object",
            &format!(
                "memory-backend-file,id=pmem{k},mem-path={},size={bytes},share=on,readonly=on",
                path.display()
            ),
            "-device",
            &format!("virtio-pmem-pci,memdev=pmem{k}"),
        ]);
    }
    if let (0, Some(file)) = (index, &files.run) {
        cmd.arg("-fw_cfg")
            .arg(format!("name=opt/fsin/run,file={}", file.display()));
    }
    if let Some(dir) = &files.qmp {
        // Shared read-only memory (the root, --share) is left out of the
        // migration (`checkpoint`), set over QMP.
        cmd.arg("-qmp").arg(format!(
            "unix:{},server=on,wait=off",
            qmp_socket(dir, index as usize).display()
        ));
    }
    if files.incoming.is_some() {
        // No self-announcement after the load: QEMU would send RARP frames
        // on its wall-clock timer, which no guest sent.
        cmd.args(["-incoming", "defer"])
            .args(["-global", "migration.announce-rounds=0"]);
    }
    if let Some(sock) = sync {
        lock_step(&mut cmd, a, index, sock, files)?;
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    Ok(cmd)
}

/// Guest `index`'s kernel command line (its address and peers, what the
/// guest's init runs) and QEMU's `-m` value (the RAM, MiB, and room for
/// the shared root and `--share`'s snapshot as memory devices).
fn kernel_line(a: &Args, index: u32, files: &RunFiles) -> (String, String) {
    let peers: Vec<String> = (0..a.guest.guests)
        .filter(|&j| j != index)
        .map(|j| guest_ip(j).to_string())
        .collect();
    // swiotlb=noforce: no 64 MiB bounce buffer, which the kernel zeroes
    // at boot (every guest would keep it in host memory; QEMU's devices
    // reach all guest RAM). nokaslr: a bzImage decompresses where it is
    // loaded rather than to a further place that it also writes.
    // cryptomgr.notests: no self-tests of every crypto algorithm at boot
    // (740 million guest instructions).
    let mut append = format!(
        "console=ttyS0 quiet panic=-1 swiotlb=noforce nokaslr cryptomgr.notests fsin.ip={} fsin.peers={} fsin.count={} fsin.size={}",
        guest_ip(index),
        peers.join(","),
        a.pings(),
        a.guest.ping_bytes
    );
    append.push_str(&format!(
        " fsin.index={index} fsin.guests={}",
        a.guest.guests
    ));
    if a.guest.bench_bytes > 0 {
        append.push_str(&format!(" fsin.bench={}", a.guest.bench_bytes));
    }
    if let (0, Some(_)) = (index, &a.run) {
        append.push_str(&format!(
            " fsin.app=1 fsin.app_timeout={}",
            a.guest.app_timeout
        ));
    }
    if a.magic && index == 0 {
        append.push_str(" fsin.magic=1");
    }
    if a.guest.crash_guest == Some(index) {
        append.push_str(" fsin.crash=1");
    }
    // Memory devices beside the RAM, each a read-only file that every
    // guest maps: the shared root (/dev/pmem0), then --share's snapshot.
    let pmems: Vec<&(PathBuf, u64)> = files.root.iter().chain(&files.share).collect();
    let mut memory = a.memory_mb().to_string();
    if !pmems.is_empty() {
        if files.root.is_some() {
            append.push_str(" fsin.root=pmem");
        }
        if files.share.is_some() {
            append.push_str(" fsin.share=/dev/pmem1");
        }
        let bytes: u64 = pmems.iter().map(|(_, b)| b).sum();
        memory = format!(
            "{}M,slots={},maxmem={}M",
            a.memory_mb(),
            pmems.len(),
            u64::from(a.memory_mb()) + bytes.div_ceil(1 << 20)
        );
    }
    (append, memory)
}

/// The lock-step part of a guest's command line: guest time from
/// instructions, and the plugin on socket `sock` in slot `index` of the
/// slice board.
///
/// # Errors
/// The plugin is not found.
fn lock_step(
    cmd: &mut Command,
    a: &Args,
    index: u32,
    sock: &Path,
    files: &RunFiles,
) -> Result<(), QemuError> {
    let plugin = plugin_path(a)?;
    // Guest time from instructions, idle time jumped over, the RTC on
    // guest time from a fixed date: nothing the guest sees comes from
    // the host's clock.
    cmd.args([
        "-icount",
        &format!("shift={},sleep=off", a.guest.icount_shift),
    ])
    .args(["-rtc", "base=2025-01-01T00:00:00,clock=vm"])
    .arg("-plugin")
    .arg(format!(
        "{},sock={},board={},slot={index},netdev=n0{}",
        plugin.display(),
        sock.display(),
        files.board.display(),
        // The kernel's instructions counted for an MPI-level trace (its
        // bursts' kernel time): some 5% more wall time.
        if a.mpi_trace.is_some() {
            ",kernel=on"
        } else {
            ""
        }
    ));
    Ok(())
}

/// File name of an image's uncompressed kernel: an x86-64 ELF `vmlinux`
/// with a PVH entry, which QEMU boots directly. When an image has it,
/// guests boot it instead of `vmlinuz`, which would first decompress
/// itself under TCG (35 guest seconds for Debian's XZ bzImage).
pub const UNCOMPRESSED_KERNEL_FILE: &str = "vmlinux";

/// The kernel a guest of `image` boots: [`UNCOMPRESSED_KERNEL_FILE`] if
/// the image has it, else `vmlinuz`.
pub(super) fn kernel_file(image: &Path) -> PathBuf {
    let elf = image.join(UNCOMPRESSED_KERNEL_FILE);
    if elf.is_file() {
        elf
    } else {
        image.join(IMAGE_FILES[0])
    }
}

/// File name of an image's shared root file system (EROFS), beside
/// [`IMAGE_FILES`]: when it is there, every guest maps it read-only as
/// its root (virtio-pmem, read in place through DAX), and the initramfs
/// only mounts it (docs/qemu.md, "Lean guests").
pub const SHARED_ROOT_FILE: &str = "root.erofs";

/// The image's shared root and its size in bytes, if it has one.
///
/// # Errors
/// [`QemuError::MemoryFile`] when the file is there but unreadable, or its size
/// is not a multiple of 2 MiB (QEMU's memory devices need that;
/// scripts/install-qemu.sh pads it).
pub(super) fn shared_root(image: &Path) -> Result<Option<(PathBuf, u64)>, QemuError> {
    pmem_file(&image.join(SHARED_ROOT_FILE))
}

/// An EROFS file that guests map as a memory device, with its size in
/// bytes; `None` when it does not exist.
pub(super) fn pmem_file(path: &Path) -> Result<Option<(PathBuf, u64)>, QemuError> {
    let path = path.to_path_buf();
    let meta = match std::fs::metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(QemuError::MemoryFile {
                path,
                why: e.to_string(),
            })
        }
    };
    let bytes = meta.len();
    if bytes == 0 || bytes % (2 << 20) != 0 {
        return Err(QemuError::MemoryFile {
            path,
            why: format!("{bytes} bytes is not a non-zero multiple of 2 MiB (pad it: truncate -s, as scripts/install-qemu.sh does)"),
        });
    }
    Ok(Some((path, bytes)))
}

/// The files a run's guests boot and read, found once for all guests: the
/// image's kernel ([`kernel_file`]) and shared root with its size in bytes
/// ([`shared_root`]), guest 0's `--run` command file ([`run_file`]),
/// `--share`'s snapshot with its size in bytes, the lock-step slice board,
/// and with a checkpoint where QMP listens and the migration files are.
pub(super) struct RunFiles {
    pub(super) kernel: PathBuf,
    pub(super) root: Option<(PathBuf, u64)>,
    pub(super) run: Option<PathBuf>,
    pub(super) share: Option<(PathBuf, u64)>,
    pub(super) board: PathBuf,
    /// With a checkpoint: the run's directory, where each guest's QMP
    /// socket goes ([`qmp_socket`]).
    pub(super) qmp: Option<PathBuf>,
    /// With a restore: the checkpoint directory with the guests' migration
    /// files ([`checkpoint::guest_file`]).
    pub(super) incoming: Option<PathBuf>,
}

/// Size of guest 0's command file (the fw_cfg file `opt/fsin/run`), bytes:
/// the command, then newlines up to this size. The guest's kernel keeps a
/// file's size from boot, so a guest restored from a checkpoint reads a new
/// command of any length up to this in place of the blank lines it was
/// booted with (which tell its `/init` to ask for the save).
pub const RUN_FILE_BYTES: usize = 16 * 1024;

/// The bytes of guest 0's command file for `cmd` (`None`: blank, the boot
/// of a checkpoint).
///
/// # Errors
/// [`QemuError::CommandTooLong`] when the command is longer than [`RUN_FILE_BYTES`]
/// less one.
pub(super) fn run_file(cmd: Option<&str>) -> Result<Vec<u8>, QemuError> {
    let mut text = cmd.unwrap_or_default().as_bytes().to_vec();
    if text.len() >= RUN_FILE_BYTES {
        return Err(QemuError::CommandTooLong {
            bytes: text.len(),
            max: RUN_FILE_BYTES - 1,
        });
    }
    text.resize(RUN_FILE_BYTES, b'\n');
    Ok(text)
}

/// The first line of `qemu --version`.
///
/// # Errors
/// [`QemuError::Io`] when QEMU cannot be run.
pub(super) fn qemu_version(qemu: &str) -> Result<String, QemuError> {
    let out = std::process::Command::new(qemu)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|source| QemuError::Io {
            what: format!("cannot run {qemu} (scripts/install-qemu.sh installs QEMU 10.0)"),
            source,
        })?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string())
}

/// A guest's QMP socket in the run's directory (checkpoints only).
pub(super) fn qmp_socket(work: &Path, i: usize) -> PathBuf {
    work.join(format!("guest-{i}.qmp"))
}

/// The program that makes `--share`'s snapshot.
pub(super) const MKFS_EROFS: &str = "mkfs.erofs";

/// Snapshots host directory `dir` as the EROFS image `dest` (every file
/// owned by root, fixed times and UUID: the same tree gives the same
/// bytes), padded to 2 MiB.
///
/// # Errors
/// [`QemuError::Share`] when `dir` is not a directory or mkfs.erofs
/// fails, [`QemuError::Io`] when mkfs.erofs is missing or `dest` cannot
/// be written.
pub(super) fn snapshot_share(dir: &Path, dest: &Path) -> Result<(PathBuf, u64), QemuError> {
    if !dir.is_dir() {
        return Err(QemuError::Share {
            dir: dir.to_path_buf(),
            why: "not a directory".into(),
        });
    }
    let out = std::process::Command::new(MKFS_EROFS)
        .args(["--quiet", "--all-root", "-T0", "-U", SHARE_UUID])
        .arg(dest)
        .arg(dir)
        .output()
        .map_err(|source| QemuError::Io {
            what: format!(
                "--share needs {MKFS_EROFS} (Debian's erofs-utils; scripts/install-qemu.sh installs it)"
            ),
            source,
        })?;
    if !out.status.success() {
        return Err(QemuError::Share {
            dir: dir.to_path_buf(),
            why: format!(
                "{MKFS_EROFS} failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    let file = io(std::fs::OpenOptions::new().write(true).open(dest), || {
        format!("cannot open {}", dest.display())
    })?;
    let len = io(file.metadata(), || {
        format!("cannot read {}", dest.display())
    })?
    .len();
    io(
        file.set_len(len.next_multiple_of(2 << 20).max(2 << 20)),
        || format!("cannot pad {}", dest.display()),
    )?;
    pmem_file(dest)?.ok_or_else(|| QemuError::MemoryFile {
        path: dest.to_path_buf(),
        why: "vanished".into(),
    })
}

/// The file system UUID of `--share` snapshots (fixed, for repeatable
/// runs).
pub(super) const SHARE_UUID: &str = "9d3e0c52-7a51-4c4e-8f0e-5f51a0000032";

/// The files of a guest image directory: the kernel and the initramfs.
pub const IMAGE_FILES: [&str; 2] = ["vmlinuz", "initramfs.cpio.gz"];

/// The first of [`IMAGE_FILES`] that `dir` lacks, as its path.
pub fn missing_image_file(dir: &Path) -> Option<PathBuf> {
    IMAGE_FILES
        .iter()
        .map(|f| dir.join(f))
        .find(|p| !p.is_file())
}

/// Checks that `dir` holds a guest image.
///
/// # Errors
/// [`QemuError::ImageIncomplete`] naming the first missing file.
pub fn check_image(dir: &Path) -> Result<(), QemuError> {
    match missing_image_file(dir) {
        Some(p) => Err(QemuError::ImageIncomplete(p)),
        None => Ok(()),
    }
}

/// File name of the plugin library that `cargo build --release -p
/// fsin-qemu-plugin` writes, and scripts/install-qemu.sh copies into the
/// guest image directory.
pub const PLUGIN_FILE: &str = "libfsin_qemu_plugin.so";

/// Where the plugin library is looked for when no `--plugin` is given:
/// next to this executable (a `target/release` build), then in
/// [`default_image_dir`] (an installed `fsin`, after
/// scripts/install-qemu.sh); the first that exists, else the first.
pub fn default_plugin_path() -> PathBuf {
    let beside = std::env::current_exe()
        .map(|e| e.with_file_name(PLUGIN_FILE))
        .unwrap_or_else(|_| PathBuf::from(PLUGIN_FILE));
    let cached = default_image_dir().join(PLUGIN_FILE);
    if !beside.is_file() && cached.is_file() {
        cached
    } else {
        beside
    }
}

/// The plugin library: `--plugin`, else [`default_plugin_path`].
pub(super) fn plugin_path(a: &Args) -> Result<PathBuf, QemuError> {
    let path = a.plugin.clone().unwrap_or_else(default_plugin_path);
    if !path.is_file() {
        return Err(QemuError::PluginMissing(path));
    }
    Ok(path)
}

/// Where a run's slice board goes: `/dev/shm` (memory, not disk), named
/// after the run's directory, else in that directory.
pub(super) fn board_path(work: &WorkDir) -> PathBuf {
    let shm = Path::new("/dev/shm");
    match work.0.path().file_name() {
        Some(name) if shm.is_dir() => shm.join(format!("{}-board.shm", name.to_string_lossy())),
        _ => work.0.path().join("board.shm"),
    }
}

/// This run's directory of plugin sockets and the command file, removed
/// when the run ends.
pub(super) struct WorkDir(pub(super) tempfile::TempDir);

impl WorkDir {
    /// Makes a directory of its own in the temporary directory,
    /// `fsin-nic-bridge-PID-` and a random suffix. A process ended at once
    /// (SIGKILL) leaves its directory behind, and a later process can get
    /// its PID: a run never takes over such a directory, nor one of
    /// another run of this process.
    ///
    /// # Errors
    /// The directory cannot be made.
    pub(super) fn new() -> Result<Self, QemuError> {
        let prefix = format!("fsin-nic-bridge-{}-", std::process::id());
        let d = tempfile::Builder::new().prefix(&prefix).tempdir();
        Ok(Self(io(d, || {
            format!(
                "cannot create {}{prefix}*",
                std::env::temp_dir().join("").display()
            )
        })?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory already in use (here one whose guest socket is still
    /// there, as a process ended at once leaves it) is never handed out
    /// again; each run's own directory goes when the run does, and its
    /// board is named after it.
    #[test]
    fn a_run_directory_is_new_and_goes_with_the_run() {
        let left = WorkDir::new().unwrap();
        std::fs::write(left.0.path().join("guest-0.sock"), b"").unwrap();
        let run = WorkDir::new().unwrap();
        assert_ne!(run.0.path(), left.0.path());
        assert_eq!(std::fs::read_dir(run.0.path()).unwrap().count(), 0);
        let board = board_path(&run);
        let name = run
            .0
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(
            board.to_string_lossy().contains(&name),
            "{}",
            board.display()
        );
        let (l, r) = (left.0.path().to_owned(), run.0.path().to_owned());
        drop(run);
        drop(left);
        assert!(
            !r.exists() && !l.exists(),
            "{} {}",
            r.display(),
            l.display()
        );
    }
}
