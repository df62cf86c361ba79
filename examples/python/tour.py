# %% [markdown]
# # A tour of fsin from Python
#
# fsin-rs simulates interconnection networks cycle by cycle, with the
# semantics of INSEE's FSIN, and runs node simulators (fake nodes, QEMU
# guests) in lock-step with them. This tour runs, in a few seconds each:
#
# 1. a **load sweep** of a 8x8 torus, with its latency and throughput curves;
# 2. an application **trace** replayed on two networks of 64 nodes;
# 3. a **co-simulation**: 16 fake nodes that exchange Ethernet frames
#    across the simulated network, at several slice lengths.
#
# It is also a plain script, `examples/python/tour.py`; both write their
# plots into `$FSIN_TOUR_OUT` (default `tour-out/`). Install the module
# with `pip install './python[examples]'` from the repository's root.

# %%
import os
from pathlib import Path

import matplotlib.pyplot as plt

import fsin

out = Path(os.environ.get("FSIN_TOUR_OUT", "tour-out"))
out.mkdir(parents=True, exist_ok=True)
print("fsin", fsin.__version__, "- plots in", out)

# %% [markdown]
# ## 1. A load sweep
#
# Uniform traffic on a 8x8 torus (INSEE's defaults: bubble flow control,
# dimension-order routing, virtual cut-through, 16-phit packets) at
# offered loads from 0.05 to 1.0 phits/node/cycle. The points run in
# parallel, each with its own seed. `fsin.topology` gives the bisection
# bound that no network of this shape can pass under uniform traffic.

# %%
sweep = fsin.sweep("load=0.05:1.0:0.05", topo="torus_8_8", cycles=10000)
bound = fsin.topology(topo="torus_8_8")["throughput_bound"]
sweep[["load", "accepted", "latency_avg"]].tail()

# %%
fig, (lat, thr) = plt.subplots(1, 2, figsize=(10, 4))
lat.plot(sweep["accepted"], sweep["latency_avg"], "o-")
lat.set(xlabel="accepted load (phits/node/cycle)", ylabel="mean latency (cycles)",
        title="torus 8x8, uniform traffic")
thr.plot(sweep["load"], sweep["accepted"], "o-", label="accepted")
thr.plot(sweep["load"], sweep["load"], ":", color="grey", label="offered")
thr.axhline(bound, linestyle="--", color="red", label="bisection bound")
thr.set(xlabel="offered load (phits/node/cycle)", ylabel="accepted load (phits/node/cycle)",
        title="throughput")
thr.legend()
fig.tight_layout()
fig.savefig(out / "sweep.png")
saturation = sweep["accepted"].max()
print(f"the torus saturates at {saturation:.3f} phits/node/cycle "
      f"({saturation / bound:.0%} of the bisection bound)")

# %% [markdown]
# ## 2. A trace on two networks
#
# The traces paper's all-to-all kernel (every task sends 4 KiB to every
# other) as a trace, replayed causally: a task's receive waits for the
# message, its later events wait for the receive. The same trace runs on
# the 8x8 torus and on a 4-ary 3-tree (fat tree) of 64 nodes.

# %%
trace = fsin.kernel("all2all", tasks=64, bytes=4096)
print(len(trace), "events;", trace["kind"].value_counts().to_dict())
fsin.write_trace(trace, out / "all2all.trc")
replays = {
    topo: fsin.run(topo=topo, tracefile=str(out / "all2all.trc"))
    for topo in ("torus_8_8", "fattree_4_3")
}
for topo, r in replays.items():
    print(f"{topo}: {r.exec_cycles:,} cycles, mean latency {r.latency_avg:.1f} cycles")

# %%
fig, ax = plt.subplots(figsize=(5, 3.5))
ax.bar(list(replays), [r.exec_cycles for r in replays.values()])
ax.set(ylabel="execution time (cycles)", title="all-to-all, 64 tasks x 4 KiB")
fig.tight_layout()
fig.savefig(out / "trace.png")

# %% [markdown]
# ## 3. A co-simulation
#
# 16 fake-node processes attach to the network server and exchange
# Ethernet frames (all-to-all, 128 bytes each) across a 4x4 torus, in
# lock-step: nodes and network advance one slice at a time (the Simics
# paper's synchronisation). A frame sent within a slice reaches its
# destination at a slice start, so a longer slice costs latency and saves
# synchronisations. `mode="exact"` is the reference; a slice no longer
# than the NICs' latency (the lookahead, `nic_latency`) gives its answer.

# %%
slices = [(20, 100), (50, 250), (200, 1000), (1000, 5000)]
net = dict(topo="torus_4_4", nic_latency=20)  # 20 network cycles in each NIC
runs = {s: fsin.cosim("all2all", nodes=16, slice=s, **net) for s in slices}
exact = fsin.cosim("all2all", nodes=16, slice=(20, 100), mode="exact", **net)
for s, r in runs.items():
    assert r.frames_delivered == r.frames_sent == 16 * 15
    print(f"slice {s[0]}:{s[1]}: {r.slices} slices, frame latency "
          f"{r.frame_latency_avg:.0f} node cycles")
print(f"exact: frame latency {exact.frame_latency_avg:.0f} node cycles")

# %%
fig, ax = plt.subplots(figsize=(5, 3.5))
ax.plot([s[1] for s in slices], [r.frame_latency_avg for r in runs.values()], "o-",
        label="lock-step")
ax.axhline(exact.frame_latency_avg, linestyle="--", color="grey", label="exact")
ax.set(xscale="log", xlabel="slice (node cycles)", ylabel="mean frame latency (node cycles)",
       title="16 fake nodes, all-to-all")
ax.legend()
fig.tight_layout()
fig.savefig(out / "cosim.png")

# %% [markdown]
# ## Next
#
# - `fsin.keys()` lists every configuration key; `help(fsin.run)`.
# - `fsin.qemu(4, app="is", topo="torus_4")` boots 4 QEMU guests and runs
#   NPB IS across the simulated network (after `scripts/install-qemu.sh`);
#   `vary={"intransit_pr": [0, 1]}, predict=True` sets the trace-driven
#   prediction beside the full-system result, as the Simics paper's Fig. 4.
# - docs/python.md has the module's reference.
