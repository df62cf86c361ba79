use super::*;

/// The calibration's network without a profile (its costs are the
/// tests' own).
fn cfg() -> Config {
    Config::from_settings(&[
        "mpi_profile=none",
        "topo=torus_2",
        "fsin_cycle_relation=200",
        "node_cycle_relation=1000",
        "node_clock=125000000",
    ])
    .unwrap()
}

/// What guests whose costs are `truth` would measure at `bytes` on the
/// network of `c` (the replay's own round trips and stream); with
/// `send_fast`, rank 0's sends return at a third of the stream's pace
/// (the receiver is the busier side).
fn live(c: &Config, truth: &CostTable, bytes: u64, send_fast: bool) -> Measured {
    let rtt = replay_s(c, truth, &ping_pong(bytes, 20)).unwrap() * 1e6 / 20.0;
    let st = replay_s(c, truth, &stream(bytes, 100)).unwrap() * 1e6 / 100.0;
    Measured {
        bytes,
        rounds: 20,
        rtt_us: rtt,
        stream_rounds: 100,
        stream_us: st,
        stream_send_us: if send_fast { st / 3.0 } else { st },
    }
}

/// [`reach`] on functions whose crossings are known: it brackets
/// the crossing to the precision asked and returns the end nearer the
/// target, never evaluates more often than bisection would (its ends,
/// `steps` halvings and one more), and far less on a line or from a
/// good hint.
#[test]
fn the_search_finds_known_crossings() {
    let count = |hint: Option<f64>, f: &dyn Fn(f64) -> f64, target: f64| {
        let mut n = 0;
        let x = reach(0.0, 1000.0, hint, target, 13, |x| {
            n += 1;
            Ok::<_, CalibrateError>(f(x))
        })
        .unwrap();
        (x, n)
    };
    let eps = 1000.0 / 8192.0;
    // A line crossing 10 at 300: found within the precision in at
    // most about half the evaluations of bisection (its two ends and
    // 13 halvings); from a hint nearby, in fewer still.
    let line = |x: f64| 10.0 + (x - 300.0) / 7.0;
    let (x, n) = count(None, &line, 10.0);
    assert!((x - 300.0).abs() <= eps, "{x}");
    assert!(n <= 8, "{n} evaluations");
    for hint in [301.0, 299.0] {
        let (x, hinted) = count(Some(hint), &line, 10.0);
        assert!((x - 300.0).abs() <= eps, "{x}");
        assert!(hinted < n, "{hinted} from {hint} against {n}");
    }
    // Steps of 1 every 10: f(x) = floor(x / 10); 4.3 is reached from
    // 50 on, but f just below 50 (4) is nearer than at 50 (5).
    let stairs = |x: f64| (x / 10.0).floor();
    let (x, n) = count(None, &stairs, 4.3);
    assert!((50.0 - 2.0 * eps..50.0).contains(&x), "{x}");
    assert!(n <= 13 + 3, "{n} evaluations");
    let (x, _) = count(None, &stairs, 4.8);
    assert!((50.0..50.0 + 2.0 * eps).contains(&x), "{x}");
    // A wrong hint costs a few evaluations, not the answer.
    let (x, n) = count(Some(900.0), &stairs, 4.8);
    assert!((50.0..50.0 + 2.0 * eps).contains(&x), "{x}");
    assert!(n <= 13 + 3 + 5, "{n} evaluations");
    // A steep curve (where the secant misleads): still within the
    // bound.
    let steep = |x: f64| (x / 1000.0).powi(9);
    let (x, n) = count(None, &steep, 0.5);
    assert!(
        (x - 1000.0 * 0.5f64.powf(1.0 / 9.0)).abs() <= 2.0 * eps,
        "{x}"
    );
    assert!(n <= 13 + 3, "{n} evaluations");
    // Above the target from the start; never reaching it.
    assert_eq!(count(None, &line, -100.0).0, 0.0);
    assert_eq!(count(None, &line, 1e9).0, 1000.0);
}

/// Live figures made by the replay itself from known costs: the fit
/// gives back both figures, and finds back the costs that they
/// determine (to the slice's 8 us of quantization, which the
/// search cannot see through): both sides of a one-segment
/// message, the busier (receiving) side of a long one, whose
/// sender's cost beyond the table's first point hides under its
/// segments' travel.
#[test]
fn the_fit_gives_the_figures_back_and_finds_known_costs() {
    let c = cfg();
    let truth = CostTable::parse("8:90000:70000,16384:150000:400000").unwrap();
    let measured = [live(&c, &truth, 8, false), live(&c, &truth, 16_384, true)];
    let Calibration {
        table,
        sizes: fitted,
        wake_ns,
        ..
    } = fit(&c, &measured, &[], None).unwrap();
    assert_eq!(wake_ns, 0);
    for f in &fitted {
        let m = f.measured;
        assert!(
            (f.replay_rtt_us - m.rtt_us).abs() <= 0.01 * m.rtt_us,
            "{f:?}"
        );
        assert!(
            (f.replay_stream_us - m.stream_us).abs() <= 0.01 * m.stream_us,
            "{f:?}"
        );
    }
    let near = |got: u64, want: u64| assert!(got.abs_diff(want) <= 8_000, "{got} against {want}");
    near(fitted[0].point.send_ns, 90_000);
    near(fitted[0].point.recv_ns, 70_000);
    near(fitted[1].point.recv_ns, 400_000);
    assert_eq!(table.points().len(), 2);
}

/// `f`'s replayed round trip and stream are the live ones, within 1%.
fn gives_both_back(f: &Fitted) {
    let m = f.measured;
    assert!((f.replay_rtt_us / m.rtt_us - 1.0).abs() <= 0.01, "{f:?}");
    assert!(
        (f.replay_stream_us / m.stream_us - 1.0).abs() <= 0.01,
        "{f:?}"
    );
}

/// The fit of guests whose costs are the table `truth` (a point at 8
/// bytes and one at `bytes`, fitted from the replay's own figures at
/// both sizes), whose second size gives both figures back.
fn fit_known(c: &Config, truth: &str, bytes: u64) -> Calibration {
    let truth = CostTable::parse(truth).unwrap();
    let measured = [live(c, &truth, 8, false), live(c, &truth, bytes, false)];
    let cal = fit(c, &measured, &[], None).unwrap();
    gives_both_back(&cal.sizes[1]);
    cal
}

/// A receiver that pays 400 us of its 1.5 ms for a 64 KiB message after
/// the message is whole (a receive tail): both sides' costs alone
/// cannot give its stream and its round trip (the stream's pace is
/// the whole cost, the round trip waits for the tail); the fit finds
/// the cost and the tail back (within 2% and 5%), and both figures.
#[test]
fn the_fit_finds_a_known_receive_tail() {
    let cal = fit_known(&cfg(), "8:90000:70000,65536:1500000:1500000:400000", 65_536);
    let f = cal.sizes[1];
    assert!(f.point.recv_ns.abs_diff(1_500_000) <= 30_000, "{f:?}");
    let tail = f.point.recv_tail_ns.expect("a tail");
    assert!(tail.abs_diff(400_000) <= 20_000, "{f:?}");
}

/// A sender that pays 40 us of its 120 us for a 512-byte message after
/// the segment has gone (a send tail; the receiver pays the first
/// size's cost): the stream's pace is the sender's whole cost, which
/// leaves the receiver's alone to give the round trip, and it cannot
/// go below the first size's. The fit finds the tail back (within a
/// slice, 8 us) and both figures; without the tail its round trip is
/// more than 10% long.
#[test]
fn the_fit_finds_a_known_send_tail() {
    let c = cfg();
    let cal = fit_known(&c, "8:90000:70000,512:120000:70000:70000:40000", 512);
    let f = cal.sizes[1];
    let m = f.measured;
    let tail = f.point.send_tail_ns.expect("a send tail");
    assert!(tail.abs_diff(40_000) <= 8_000, "{f:?}");
    let untailed = CostPoint {
        send_tail_ns: None,
        ..f.point
    };
    let plain = CostTable::new(vec![cal.table.points()[0], untailed]).unwrap();
    let rtt = per_round_us(&c, &plain, &ping_pong(512, m.rounds), m.rounds).unwrap();
    assert!(rtt > 1.1 * m.rtt_us, "{rtt} against {}", m.rtt_us);
}

/// A first contact made by the replay itself with a peer's set-up of
/// 2 ms (before Open MPI's event tick, 10 ms): the fit finds it
/// back to within two slices (16 us: the pair opens at a slice's
/// quantum, and its first frames are handed over at the next slice
/// start, so set-ups two slices apart can give one replay),
/// and what its replayed first exchange takes beyond the others is
/// the live one's.
#[test]
fn the_fit_finds_a_known_connection_time() {
    let c = cfg();
    let table = CostTable::parse("8:90000:70000").unwrap();
    let p = first_contact(20);
    let mut truth = c.clone();
    truth.traffic.app.mpi.connect_ns = 2_000_000;
    let extra = (replay_s(&truth, &table, &p).unwrap() - replay_s(&c, &table, &p).unwrap()) * 1e6;
    let warm = replay_s(&c, &table, &exchange(1, 8, 21)).unwrap() * 1e6 / 21.0;
    // The set-up shows: a tick and more (the ranks set each other up
    // before their loops' next run, a tick after).
    assert!(extra > 10_000.0, "{extra}");
    let k = Contact {
        first_us: warm + extra,
        rounds: 20,
        us: warm,
    };
    let m = Measured {
        bytes: 8,
        rounds: 20,
        rtt_us: replay_s(&c, &table, &ping_pong(8, 20)).unwrap() * 1e6 / 20.0,
        stream_rounds: 100,
        stream_us: replay_s(&c, &table, &stream(8, 100)).unwrap() * 1e6 / 100.0,
        stream_send_us: 0.0,
    };
    let cal = fit(&c, &[m], &[], Some(k)).unwrap();
    assert!(cal.connect_ns.abs_diff(2_000_000) <= 16_000, "{cal:?}");
    let (_, extra) = cal.contact.unwrap();
    let live = k.first_us - k.us;
    assert!((extra - live).abs() <= 0.01 * live, "{extra} against {k:?}");
}

/// The built-in profile (what `fsin run` replays with by default)
/// gives back the live figures its comments record, measured on the
/// default guests: on the network its comments name, each size's
/// round trip and stream within 3.5% of the live ones (issue 70's goal
/// is 3%: the profile of 2026-12-07 gives its 1,448-byte round trip
/// -3.3% and stream +3.3%, the fit's balance between two errors of
/// opposite sign, and its 64-byte stream +3.4%, a live stream faster
/// than the 8-byte one, 90.1 against 92.8 us, which costs that do not
/// fall with the size cannot give; every other figure within 2%); a
/// replay model that moves away from the guests fails here, and the
/// profile is made again (its first comment lines give the command).
#[test]
fn the_built_in_profile_gives_back_its_guests_figures() {
    let text = crate::config::BUILT_IN_PROFILE;
    let keys: Vec<&str> = (text.lines())
        .find_map(|l| l.strip_prefix("# Replayed with: "))
        .expect("the network it was fitted on")
        .split_whitespace()
        .collect();
    let with_contact = Config::from_settings(&keys).unwrap();
    assert!(!with_contact.traffic.app.mpi.costs.is_empty());
    // The sizes' figures are warm ones (a first contact is its own).
    let mut c = with_contact.clone();
    c.traffic.app.mpi.connect_ns = 0;
    let mut sizes = 0;
    for line in text.lines() {
        let f: Vec<&str> = line.trim_start_matches("# ").split(" | ").collect();
        let Some(bytes) = f.first().and_then(|b| b.parse::<u64>().ok()) else {
            continue;
        };
        let live: Vec<f64> = (f[1].split(' ')).map(|x| x.parse().unwrap()).collect();
        let table = &c.traffic.app.mpi.costs;
        let rtt = per_round_us(&c, table, &ping_pong(bytes, 20), 20).unwrap();
        let st = per_round_us(&c, table, &stream(bytes, 100), 100).unwrap();
        let (a, b) = ((rtt / live[0] - 1.0).abs(), (st / live[1] - 1.0).abs());
        assert!(
            a.max(b) <= 0.035,
            "{bytes} bytes: round trip {rtt:.1} us against {}, stream {st:.1} against {}",
            live[0],
            live[1]
        );
        sizes += 1;
    }
    assert_eq!(sizes, 11);
    // The first contact: what the first exchange takes beyond the
    // others, live (its line's first two figures) and replayed.
    let k: Vec<f64> = (text.lines())
        .find_map(|l| l.strip_prefix("# first contact | live "))
        .expect("the first contact's line")
        .split(|ch: char| !ch.is_ascii_digit() && ch != '.')
        .filter_map(|x| x.parse().ok())
        .collect();
    let live = k[0] - k[1];
    let p = first_contact(20);
    let table = &c.traffic.app.mpi.costs;
    let extra =
        (replay_s(&with_contact, table, &p).unwrap() - replay_s(&c, table, &p).unwrap()) * 1e6;
    assert!(
        (extra - live).abs() <= 0.02 * live,
        "first contact: {extra:.1} us more in the replay, {live:.1} live"
    );
}

/// Sizes out of order are refused.
#[test]
fn sizes_must_increase() {
    let m = Measured {
        bytes: 8,
        rounds: 1,
        rtt_us: 100.0,
        stream_rounds: 1,
        stream_us: 50.0,
        stream_send_us: 50.0,
    };
    assert!(matches!(
        fit(&cfg(), &[m, m], &[], None),
        Err(CalibrateError::Nothing(_))
    ));
    assert!(matches!(
        fit(&cfg(), &[], &[], None),
        Err(CalibrateError::Nothing(_))
    ));
}
