"""Helper of bench/trace.

Inside gdb (gdb -x bench/trace_gdb.py, with TRACE_PORT, TRACE_ADDR,
TRACE_ITERS and TRACE_OUT in the environment): connects to QEMU's gdb stub,
stops at TRACE_ADDR and single-steps TRACE_ITERS times until the vCPU is
back there, writing every program counter to TRACE_OUT.

As a program (python3 bench/trace_gdb.py report PCS SYSTEM_MAP MODSYMS
CONFIG LOOP): the instructions per iteration, by function.
"""
import bisect
import os
import sys

MASK = (1 << 64) - 1


def trace():
    import gdb  # noqa: only inside gdb

    port = int(os.environ["TRACE_PORT"])
    addr = int(os.environ["TRACE_ADDR"], 16)
    iters = int(os.environ["TRACE_ITERS"])
    gdb.execute("set pagination off")
    gdb.execute("set confirm off")
    gdb.execute("set architecture i386:x86-64")
    gdb.execute(f"target remote 127.0.0.1:{port}")
    gdb.execute(f"hbreak *{addr:#x}")
    gdb.execute("continue")
    gdb.execute("delete")
    pcs = []
    done = 0
    while done < iters and len(pcs) < 200000 * max(iters, 1):
        gdb.execute("stepi", to_string=True)
        pc = int(gdb.parse_and_eval("$pc")) & MASK
        pcs.append(pc)
        if pc == addr:
            done += 1
    with open(os.environ["TRACE_OUT"], "w") as f:
        f.write(f"{addr:x} {done}\n")
        f.writelines(f"{pc:x}\n" for pc in pcs)
    gdb.execute("detach")


def load_syms(system_map, modsyms):
    syms = []
    with open(system_map) as f:
        for line in f:
            a, t, name = line.split()[:3]
            if t.lower() in ("t", "w"):
                syms.append((int(a, 16), name))
    with open(modsyms) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 4 and parts[1].lower() == "t":
                syms.append((int(parts[0], 16), f"{parts[2]} {parts[3]}"))
    syms.sort()
    return syms


def rust_last_ident(sym):
    """The last identifier of a Rust v0 symbol (<length>[_]<identifier>)."""
    last, i = None, 2
    while i < len(sym):
        if sym[i].isdigit() and sym[i] != "0":
            j = i
            while j < len(sym) and sym[j].isdigit():
                j += 1
            n = int(sym[i:j])
            if j < len(sym) and sym[j] == "_":
                j += 1
            if j + n <= len(sym) and (sym[j].isalpha() or sym[j] == "_"):
                last, i = sym[j:j + n], j + n
                continue
            i = j
        else:
            i += 1
    return last


def demangle(name):
    # Rust v0 names: keep the last identifier chunks readable enough.
    if "_RNv" in name or "_RIN" in name:
        for key in ("page_alloc", "page_free", "page_ref_sub", "page_ref", "page_split",
                    "page_copy", "obj_alloc", "obj_free", "show_mem"):
            if key in name:
                shim = name.split()[0].startswith("_RIN")
                return ("extern C shim " if shim else "Rust Backend::") + key + " " + name.split()[-1]
        # Any other Rust function (allocprof_rust_bench's kbox_loop, the
        # kernel crate's): the last identifier of its path.
        ident = rust_last_ident(name.split()[0])
        if ident:
            return f"Rust {ident}" + (" " + name.split()[-1] if " " in name else "")
    return name


def report(pcs_file, system_map, modsyms, cfg, loop):
    syms = load_syms(system_map, modsyms)
    addrs = [a for a, _ in syms]
    with open(pcs_file) as f:
        head = f.readline().split()
        iters = int(head[1])
        pcs = [int(x, 16) for x in f]
    counts = {}
    for pc in pcs:
        i = bisect.bisect_right(addrs, pc) - 1
        name = syms[i][1] if i >= 0 else "?"
        counts[name] = counts.get(name, 0) + 1
    total = len(pcs)
    print(f"{cfg}, {loop} loop: {total} instructions in {iters} iterations = "
          f"{total / iters:.1f} per iteration")
    for name, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(f"  {n / iters:8.1f}  {demangle(name)}")


if __name__ == "__main__":
    if len(sys.argv) == 7 and sys.argv[1] == "report":
        report(*sys.argv[2:])
    else:
        trace()
