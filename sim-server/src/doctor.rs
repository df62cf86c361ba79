//! `fsin doctor`: checks that this machine can run what the README shows,
//! one line per check (ok or problem, and what to run to fix it): QEMU
//! 10.0 and the lock-step plugin loading into it, the guest images built
//! by the current scripts/install-qemu.sh, free space in /dev/shm, the
//! memory and cores for `--guests N`, and the loopback ports.

use std::net::{Ipv4Addr, SocketAddr, TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use qemu_adapter::qemu::{
    guest_memory_mib, guests_memory_mib, missing_image_file, QEMU_BASE_MIB, QEMU_BINARY,
    TCG_CODE_MIB,
};
use serde::Serialize;

/// The stamp of the guest images this `fsin` was built for (build.rs);
/// empty when its sources were not at hand.
const IMAGE_STAMP: &str = env!("FSIN_GUEST_IMAGE_STAMP");

/// What scripts/install-qemu.sh installs and builds.
const INSTALL: &str = "scripts/install-qemu.sh";

/// Free space /dev/shm should have: the slice barriers of a few servers
/// (a page or two each) with a wide margin.
const SHM_MIB: u64 = 64;

/// How long the plugin probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

#[derive(clap::Args)]
pub struct DoctorArgs {
    /// Check memory and cores for this many guests.
    #[arg(long, default_value_t = 2, value_name = "N")]
    guests: u32,
    /// Guest RAM, MiB (`fsin qemu`'s default with --run or --app).
    #[arg(long, default_value_t = 1024, value_name = "MB")]
    memory_mb: u32,
    /// Guest image directory (default: $FSIN_GUEST_DIR, else
    /// ~/.cache/fsin-guest); its mpi/ image is checked too.
    #[arg(long, value_name = "DIR")]
    image: Option<PathBuf>,
    /// The QEMU binary.
    #[arg(long, default_value = QEMU_BINARY)]
    qemu: String,
    /// Print one JSON object (last line of stdout) instead of text.
    #[arg(long)]
    json: bool,
}

/// One check's verdict.
#[derive(Debug, Serialize)]
struct Check {
    /// What was checked: qemu, plugin, image, mpi-image, shm, memory,
    /// cores, ports.
    check: &'static str,
    ok: bool,
    /// What was found.
    detail: String,
    /// What to run or change when it is not ok.
    fix: Option<String>,
}

impl Check {
    fn ok(check: &'static str, detail: String) -> Check {
        Check {
            check,
            ok: true,
            detail,
            fix: None,
        }
    }

    fn problem(check: &'static str, detail: String, fix: impl Into<String>) -> Check {
        Check {
            check,
            ok: false,
            detail,
            fix: Some(fix.into()),
        }
    }
}

/// `fsin doctor`: prints the checks; `Ok(true)` when every one passed.
///
/// # Errors
/// Only when the report cannot be written.
pub fn doctor(a: &DoctorArgs) -> anyhow::Result<bool> {
    let image = a
        .image
        .clone()
        .unwrap_or_else(qemu_adapter::qemu::default_image_dir);
    let qemu = qemu_check(&a.qemu);
    let plugin = plugin_check(&a.qemu, qemu.ok);
    let small = image_check("image", &image);
    let guests_run = qemu.ok && plugin.ok && small.ok && a.qemu == QEMU_BINARY;
    let mut checks = vec![
        qemu,
        plugin,
        small,
        image_check("mpi-image", &image.join("mpi")),
        shm_check(Path::new("/dev/shm")),
        memory_check(a.guests, a.memory_mb),
        cores_check(a.guests),
        ports_check(),
    ];
    if guests_run && a.image.is_none() {
        checks.push(speed_check(a.guests));
    }
    let ready = checks.iter().all(|c| c.ok);
    if a.json {
        println!(
            "{}",
            serde_json::json!({ "ready": ready, "checks": checks })
        );
    } else {
        for c in &checks {
            let verdict = if c.ok { "ok" } else { "problem" };
            println!("{verdict:<8} {:<10} {}", c.check, c.detail);
            if let Some(fix) = &c.fix {
                println!("{:<19} fix: {fix}", "");
            }
        }
        println!(
            "{}",
            if ready {
                "ready: every check passed"
            } else {
                "not ready: fix the problems above, then run `fsin doctor` again"
            }
        );
    }
    Ok(ready)
}

/// `MAJOR.MINOR.PATCH` from `qemu-system-x86_64 --version`'s first line.
fn qemu_version(text: &str) -> Option<&str> {
    let rest = text.lines().next()?.split("version ").nth(1)?;
    rest.split_whitespace().next()
}

fn qemu_check(qemu: &str) -> Check {
    let out = Command::new(qemu)
        .arg("--version")
        .stdin(Stdio::null())
        .output();
    let text = match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        Ok(o) => {
            return Check::problem(
                "qemu",
                format!("`{qemu} --version` failed ({})", o.status),
                INSTALL,
            )
        }
        Err(e) => {
            return Check::problem("qemu", format!("cannot run {qemu}: {e}"), INSTALL);
        }
    };
    match qemu_version(&text) {
        Some(v) if v.starts_with("10.0.") || v == "10.0" => {
            Check::ok("qemu", format!("QEMU {v} ({qemu})"))
        }
        Some(v) => Check::problem(
            "qemu",
            format!("QEMU {v}: lock-step needs 10.0 (the plugin reads its internal layouts)"),
            format!("{INSTALL} (installs 10.0 from bookworm-backports)"),
        ),
        None => Check::problem(
            "qemu",
            format!(
                "no version in `{qemu} --version`: {}",
                text.lines().next().unwrap_or_default()
            ),
            INSTALL,
        ),
    }
}

/// Loads the plugin into QEMU without its socket argument: a plugin that
/// loads, accepts this QEMU's version and sees `-icount` refuses only that
/// argument, and QEMU exits at once.
fn plugin_check(qemu: &str, qemu_ok: bool) -> Check {
    let path = qemu_adapter::qemu::default_plugin_path();
    if !path.is_file() {
        return Check::problem(
            "plugin",
            format!("{} is missing", path.display()),
            format!("{INSTALL} (or cargo build --release -p fsin-qemu-plugin)"),
        );
    }
    if !qemu_ok {
        return Check::problem(
            "plugin",
            format!("{}: not tried without QEMU 10.0", path.display()),
            INSTALL,
        );
    }
    let child = Command::new(qemu)
        .args(["-machine", "none", "-accel", "tcg", "-display", "none"])
        .args(["-nodefaults", "-icount", "shift=3,sleep=off", "-plugin"])
        .arg(&path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return Check::problem("plugin", format!("cannot run {qemu}: {e}"), INSTALL),
    };
    let deadline = Instant::now() + PROBE_TIMEOUT;
    while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    if matches!(child.try_wait(), Ok(None)) {
        let _ = child.kill();
        let _ = child.wait();
        return Check::problem(
            "plugin",
            format!(
                "QEMU did not exit within {} s with {} loaded",
                PROBE_TIMEOUT.as_secs(),
                path.display()
            ),
            INSTALL,
        );
    }
    let mut err = String::new();
    if let Some(mut s) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut s, &mut err);
    }
    if err.contains("missing the sock=PATH argument") {
        Check::ok("plugin", format!("{} loads into QEMU", path.display()))
    } else {
        let why = err
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no message");
        Check::problem(
            "plugin",
            format!("{} does not load: {why}", path.display()),
            format!("{INSTALL} (rebuilds the plugin for this QEMU)"),
        )
    }
}

/// A guest image in `dir`: its kernel and initramfs, and the stamp of the
/// sources it was built from against this `fsin`'s.
fn image_check(check: &'static str, dir: &Path) -> Check {
    if let Some(missing) = missing_image_file(dir) {
        return Check::problem(
            check,
            format!("{} is missing", missing.display()),
            format!("{INSTALL} (builds the images into $FSIN_GUEST_DIR or ~/.cache/fsin-guest)"),
        );
    }
    let stamp = std::fs::read_to_string(dir.join("image.stamp")).unwrap_or_default();
    let stamp = stamp.trim();
    if IMAGE_STAMP.is_empty() {
        return Check::ok(
            check,
            format!(
                "{} (stamp {stamp}; this fsin was built without the image sources, so not compared)",
                dir.display()
            ),
        );
    }
    if stamp != IMAGE_STAMP {
        return Check::problem(
            check,
            format!(
                "{} was built from other sources (stamp {}, this fsin expects {IMAGE_STAMP})",
                dir.display(),
                if stamp.is_empty() { "none" } else { stamp }
            ),
            format!("{INSTALL} (rebuilds what changed)"),
        );
    }
    Check::ok(
        check,
        format!("{} (built by the current script)", dir.display()),
    )
}

/// Free bytes of the file system at `path`.
fn free_bytes(path: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: a NUL-terminated path and a buffer of the right type, which
    // statvfs fills when it returns 0.
    if unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: statvfs returned 0.
    let st = unsafe { st.assume_init() };
    Ok(st.f_bavail.saturating_mul(st.f_frsize))
}

fn shm_check(shm: &Path) -> Check {
    match free_bytes(shm) {
        Ok(free) if free >= SHM_MIB << 20 => Check::ok(
            "shm",
            format!("{} MiB free in {}", free >> 20, shm.display()),
        ),
        Ok(free) => Check::problem(
            "shm",
            format!(
                "{} MiB free in {}; the shared-memory slice barrier wants {SHM_MIB}",
                free >> 20,
                shm.display()
            ),
            format!(
                "remove stale barrier files from {} (fsin-PID-*.shm of servers no longer running), or run with --no-shared-memory",
                shm.display()
            ),
        ),
        Err(e) => Check::problem(
            "shm",
            format!("cannot read {}: {e}", shm.display()),
            "mount a tmpfs on /dev/shm, or run with --no-shared-memory",
        ),
    }
}

/// Whether `guests` guests of `memory_mb` MiB of RAM fit in the memory a
/// run may take (`fsin --max-memory`, else MemAvailable), by the estimate
/// [`guests_memory_mib`]: `Ok(what was found)`, or `Err((what was found,
/// what to change))`. `fsin qemu` refuses a run that does not fit before
/// any QEMU starts.
pub fn fit_guests(guests: u32, memory_mb: u32) -> Result<String, (String, String)> {
    let need = guests_memory_mib(guests, memory_mb);
    let each = guest_memory_mib(memory_mb);
    let Some((limit, what)) = fsin::limits::memory_limit() else {
        return Ok("MemAvailable unreadable (/proc/meminfo): not checked".into());
    };
    let limit = limit >> 20;
    if need <= limit {
        return Ok(format!(
            "{guests} guests of {memory_mb} MiB need about {need} MiB; {what}: {limit} MiB"
        ));
    }
    let ram = each - QEMU_BASE_MIB - TCG_CODE_MIB;
    Err((
        format!(
            "{guests} guests of {memory_mb} MiB may need {need} MiB ({each} MiB each: {ram} MiB of guest RAM touched, {} MiB of QEMU and TCG code), more than {what}, {limit} MiB",
            QEMU_BASE_MIB + TCG_CODE_MIB
        ),
        format!(
            "fewer guests ({} fit), or raise fsin --max-memory for an application known to need less",
            limit / each
        ),
    ))
}

fn memory_check(guests: u32, memory_mb: u32) -> Check {
    match fit_guests(guests, memory_mb) {
        Ok(detail) => Check::ok("memory", detail),
        Err((detail, fix)) => Check::problem("memory", detail, fix),
    }
}

fn cores_check(guests: u32) -> Check {
    let cores = crate::machine::cores();
    let share = if guests > cores {
        format!(
            ": the {guests} guests take turns, about {} per core, so wall time grows with them",
            guests.div_ceil(cores)
        )
    } else {
        format!(": one each for {guests} guests")
    };
    Check::ok("cores", format!("{cores} cores{share}"))
}

/// One guest's speed alone ([`crate::machine::speed`]: measured once, a
/// guest of the small image spinning for a guest second), and what it
/// makes of a guest second of `guests` busy guests on this machine.
fn speed_check(guests: u32) -> Check {
    let shift = qemu_adapter::qemu::args::ICOUNT_SHIFT;
    match crate::machine::speed::guest_speed(shift) {
        Some(ips) => {
            let cores = crate::machine::cores();
            let bound = crate::machine::speed::bound_s(guests, 1.0, shift, ips, cores);
            Check::ok(
                "speed",
                format!(
                    "one guest alone runs {:.0} M instructions/s: a guest second of {guests} busy guests takes at least {bound:.2} s on {cores} cores",
                    ips / 1e6
                ),
            )
        }
        None => Check::problem(
            "speed",
            "one guest could not run a shell loop (the line above says why)".into(),
            "`fsin qemu --guests 1 --run true topo=torus_2` names the problem",
        ),
    }
}

/// The server's loopback ports: an ephemeral TCP port (`fsin demo`, `fsin
/// qemu`), a UDP one (the datagram fast path), and `fsin serve`'s default
/// 127.0.0.1:50051.
fn ports_check() -> Check {
    let lo = |port| SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    if let Err(e) = TcpListener::bind(lo(0)) {
        return Check::problem(
            "ports",
            format!("cannot listen on TCP 127.0.0.1: {e}"),
            "bring up the loopback interface (ip link set lo up)",
        );
    }
    if let Err(e) = UdpSocket::bind(lo(0)) {
        return Check::problem(
            "ports",
            format!("cannot bind UDP 127.0.0.1: {e}"),
            "bring up the loopback interface (ip link set lo up)",
        );
    }
    match TcpListener::bind(lo(50051)) {
        Ok(_) => Check::ok(
            "ports",
            "loopback TCP and UDP bind; 127.0.0.1:50051 (fsin serve's default) is free".into(),
        ),
        Err(e) => Check::problem(
            "ports",
            format!("127.0.0.1:50051, fsin serve's default, cannot be bound: {e}"),
            "stop what listens there, or give fsin serve --listen 127.0.0.1:PORT",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_read_from_qemus_first_line() {
        assert_eq!(
            qemu_version("QEMU emulator version 10.0.2 (Debian 1:10.0.2+ds-2)\nCopyright"),
            Some("10.0.2")
        );
        assert_eq!(qemu_version("QEMU emulator version 7.2.15"), Some("7.2.15"));
        assert_eq!(qemu_version("something else"), None);
    }

    #[test]
    fn an_empty_directory_has_no_image() {
        let dir = std::env::temp_dir().join(format!("fsin-doctor-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let c = image_check("image", &dir);
        assert!(!c.ok);
        assert!(c.detail.contains("vmlinuz is missing"), "{}", c.detail);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
