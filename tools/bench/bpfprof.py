#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Watch one tracer process's BPF programs and maps while it runs.

Usage: bpfprof.py (--pid PID | --child-of PID | --pidfile F [--child]) --out FILE
                  [--interval S] [--bpftool PATH] [--cont PID [--cont-after FILE]]
                  [--ready FILE] [--pause-of PID]

--pidfile waits (up to 60 s) for F to hold a pid, so the watcher can be started before the
process it watches (Python may start slower than a short run lasts); --child watches that
pid's first child (the tracer under /usr/bin/time). --cont PID sends SIGCONT to PID (a
stopped workload) once the tracer is attached: its bpf_link fds exist and have not changed
for 0.3 s (or after 60 s, whatever happened), and, with --cont-after FILE, once FILE exists.
--ready FILE creates FILE once the links are stable, so that a script can attach a second
tracer after this one (programs on one hook run in the order they were attached, and the first
runs with the colder caches). With --cont, the programs' counters are reported from the moment
the workload was continued: what the tracer ran before it (a second tracer's start-up, say) is
left out. --pause-of PID: the counters are also read when PID (the workload, continued) is
first seen asleep in its --pause-before-ms, after its set-up and before its loop; each
program's run_cnt_setup / run_time_ns_setup are what it ran in between (the set-up's events).
"""
import argparse
import json
import os
import subprocess
import sys
import time


def read_fdinfo(pid, links=None):
    progs, maps = {}, {}
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return None, None
    for fd in fds:
        try:
            link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if link == "anon_inode:bpf_link" and links is not None:
            links.append(fd)
            continue
        if link not in ("anon_inode:bpf-prog", "anon_inode:bpf-map"):
            continue
        try:
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                kv = {}
                for line in f:
                    k, _, v = line.partition(":")
                    kv[k.strip()] = v.strip()
        except OSError:
            continue
        if "prog_id" in kv:
            i = int(kv["prog_id"])
            progs[i] = {
                "id": i,
                "type": kv.get("prog_type"),
                "run_time_ns": int(kv.get("run_time_ns", 0)),
                "run_cnt": int(kv.get("run_cnt", 0)),
                "memlock": int(kv.get("memlock", 0)),
            }
        elif "map_id" in kv:
            i = int(kv["map_id"])
            maps[i] = {
                "id": i,
                "type": kv.get("map_type"),
                "max_entries": int(kv.get("max_entries", 0)),
                "memlock": int(kv.get("memlock", 0)),
            }
    return progs, maps


def vmhwm_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def bpftool_json(bpftool, what):
    try:
        r = subprocess.run([bpftool, what, "show", "-j"], capture_output=True, text=True,
                           timeout=10)
        return {o["id"]: o for o in json.loads(r.stdout or "[]")}
    except (OSError, ValueError, subprocess.SubprocessError):
        return {}


def child_of(ppid):
    try:
        with open("/proc/%d/task/%d/children" % (ppid, ppid)) as f:
            kids = f.read().split()
        return int(kids[0]) if kids else None
    except OSError:
        return None


def in_pause(pid):
    """Whether pid sleeps in nanosleep (the workloads' pause before their loop)."""
    try:
        with open("/proc/%d/wchan" % pid) as f:
            return "nanosleep" in f.read()
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pid", type=int)
    ap.add_argument("--child-of", type=int)
    ap.add_argument("--pidfile")
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--out", required=True)
    ap.add_argument("--interval", type=float, default=0.05)
    ap.add_argument("--bpftool", default="bpftool")
    ap.add_argument("--cont", type=int)
    ap.add_argument("--ready")
    ap.add_argument("--cont-after")
    ap.add_argument("--pause-of", type=int)
    a = ap.parse_args()

    t0 = time.monotonic()
    if a.pidfile:
        p = None
        while p is None and time.monotonic() - t0 < 60:
            try:
                p = int(open(a.pidfile).read().strip())
            except (OSError, ValueError):
                time.sleep(0.005)
        if p is None:
            json.dump({"error": "no pid in %s" % a.pidfile}, open(a.out, "w"))
            return 1
        if a.child:
            a.child_of = p
        else:
            a.pid = p
    pid = a.pid
    while pid is None:
        pid = child_of(a.child_of)
        if pid is None:
            if not os.path.exists("/proc/%d" % a.child_of) or time.monotonic() - t0 > 30:
                json.dump({"error": "no child process to watch"}, open(a.out, "w"))
                return 1
            time.sleep(0.01)

    progs, maps_best, names, map_names = {}, {}, {}, {}
    hwm, attached, polls, last_tool = None, None, 0, 0.0
    links_prev, links_since, continued = None, None, None
    ready_done, base, at_pause = False, {}, None
    while True:
        links = []
        p, m = read_fdinfo(pid, links)
        if p is None:
            break
        if (a.cont or a.ready) and continued is None:
            now = time.monotonic()
            key = tuple(sorted(links))
            if key != links_prev:
                links_prev, links_since = key, now
            stable = (links and now - links_since >= 0.3) or now - t0 > 60
            if stable and a.ready and not ready_done:
                open(a.ready, "w").close()
                ready_done = True
            if stable and (not a.cont_after or os.path.exists(a.cont_after)
                           or now - t0 > 60):
                if a.cont:
                    base = {i: (v["run_cnt"], v["run_time_ns"]) for i, v in p.items()}
                    try:
                        os.kill(a.cont, 18)  # SIGCONT
                    except OSError:
                        pass
                continued = now - t0
        elif a.pause_of and continued is not None and at_pause is None and in_pause(a.pause_of):
            at_pause = {i: (v["run_cnt"], v["run_time_ns"]) for i, v in p.items()}
        polls += 1
        h = vmhwm_kb(pid)
        if h is not None:
            hwm = h
        for i, v in p.items():
            old = progs.get(i)
            if old is None or v["run_cnt"] >= old["run_cnt"]:
                progs[i] = v
        if p and attached is None:
            attached = time.monotonic() - t0
        if len(m) >= len(maps_best):
            maps_best = m
        now = time.monotonic()
        # Names come from bpftool, once a second, and at once for programs new since: a
        # run shorter than a second after its first program loaded had unnamed ones.
        if p and (now - last_tool >= 1.0 or any(i not in names for i in p)):
            last_tool = now
            tp = bpftool_json(a.bpftool, "prog")
            tm = bpftool_json(a.bpftool, "map")
            for i in p:
                if i in tp:
                    names[i] = tp[i].get("name", "?")
                    if "run_cnt" in tp[i] and tp[i]["run_cnt"] > progs[i]["run_cnt"]:
                        progs[i]["run_cnt"] = tp[i]["run_cnt"]
                        progs[i]["run_time_ns"] = tp[i].get("run_time_ns", 0)
            for i in m:
                if i in tm:
                    map_names[i] = (tm[i].get("name", "?"), tm[i].get("bytes_memlock"))
        if not os.path.exists("/proc/%d" % pid):
            break
        try:
            # a zombie has no fds: stop rather than spin
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
        except OSError:
            break
        time.sleep(a.interval)

    out_progs = []
    for i, v in sorted(progs.items()):
        v["name"] = names.get(i, "?")
        if at_pause is not None:
            cnt_cont, ns_cont = base.get(i, (0, 0))
            cnt_pause, ns_pause = at_pause.get(i, (cnt_cont, ns_cont))
            v["run_cnt_setup"], v["run_time_ns_setup"] = cnt_pause - cnt_cont, ns_pause - ns_cont
        if i in base:
            v["run_cnt_before"], v["run_time_ns_before"] = base[i]
            v["run_cnt"] -= base[i][0]
            v["run_time_ns"] -= base[i][1]
        v["ns_per_run"] = v["run_time_ns"] / v["run_cnt"] if v["run_cnt"] else None
        out_progs.append(v)
    out_maps = []
    for i, v in sorted(maps_best.items()):
        nm = map_names.get(i)
        v["name"] = nm[0] if nm else "?"
        if nm and nm[1] is not None:
            v["bytes_memlock_bpftool"] = nm[1]
        out_maps.append(v)
    res = {
        "pid": pid,
        "polls": polls,
        "attached_s": attached,
        "continued_s": continued,
        "pause_seen": at_pause is not None,
        "vmhwm_kb": hwm,
        "progs": out_progs,
        "maps": out_maps,
        "map_memlock_total": sum(v.get("bytes_memlock_bpftool", v["memlock"]) for v in out_maps),
        "prog_memlock_total": sum(v["memlock"] for v in out_progs),
    }
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
