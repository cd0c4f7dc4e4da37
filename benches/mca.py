#!/usr/bin/env python3
"""Static proxy for issue 13: our Vaes256 bulk loop against ring's VAES-AVX2 loop, in llvm-mca.

Called by benches/mca.sh, which prepares the inputs (gcm-core's assembly, ring's .S, the
tools); this helper finds the loops, cuts each one's steady-state path out as straight-line
code, runs llvm-mca on it for each CPU model, measures a few instruction mixes on the host
to check the model, and prints the Markdown section of benches/RESULTS.md on stdout.

Nothing here knows line numbers or label numbers: the loops are found by their shape (a
back edge whose straight-line path holds whole AES steps over several vectors and the most
carry-less multiplies; for ring, its named loop label and key-size branches), so it keeps
working while the kernels change.
"""

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile

AES = ("vaesenc", "vaesenclast")
XOR = ("vpxor", "vxorps", "vxorpd", "vpxord", "vpxorq", "vpternlogd", "vpternlogq")
SHUFFLE_PREFIXES = (
    "vpshufb", "vpshufd", "vshufp", "vpunpck", "vpalignr", "vperm", "vextracti", "vinserti",
    "vextractf", "vinsertf", "vpsrldq", "vpslldq", "vpblendd", "vmovhlps", "vmovlhps",
    "vpbroadcast", "vshufi", "vpermq", "vpermd", "vunpck",
)
MEM = re.compile(r"(?:^|,)\s*([-\w.$+]*\((%\w+)?(?:,%\w+)?(?:,\d)?\))")
SIM_ITERATIONS = 200


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------
# A minimal instruction stream: ("label", name) and ("insn", mnemonic, operands) entries.
# ---------------------------------------------------------------------------------------


def parse_rustc_asm(path):
    """Splits rustc's `--emit asm` output into {symbol: [entries]} for every function."""
    funcs, cur = {}, None
    for raw in open(path, encoding="utf-8", errors="replace"):
        line = raw.rstrip("\n")
        m = re.match(r"^([A-Za-z_$][\w$.]*):", line)
        if m and not line.startswith(".L"):
            cur = m.group(1)
            funcs[cur] = []
            continue
        if cur is None:
            continue
        m = re.match(r"^(\.L[\w$.]+):", line)
        if m:
            funcs[cur].append(("label", m.group(1)))
            continue
        code = line.split("#", 1)[0].strip()
        if not code or code.startswith("."):
            continue
        mn, _, ops = code.partition("\t") if "\t" in code else code.partition(" ")
        funcs[cur].append(("insn", mn.strip(), ops.strip()))
    return funcs


def parse_objdump(text):
    """objdump -d (AT&T, no raw bytes, object assembled with local labels kept) into
    {symbol: [entries]}; branch operands become label names."""
    funcs, cur = {}, None
    addr_label = {}
    rows = []
    for line in text.splitlines():
        m = re.match(r"^([0-9a-f]+) <(.+)>:$", line)
        if m:
            addr, name = int(m.group(1), 16), m.group(2)
            addr_label[addr] = name
            rows.append(("label", name))
            continue
        m = re.match(r"^\s*([0-9a-f]+):\t(.*)$", line)
        if m:
            code = m.group(2).split("#", 1)[0].strip()
            if not code or code.startswith("(bad)"):
                continue
            mn, _, ops = code.partition(" ")
            rows.append(("insn", mn.strip(), ops.strip()))
    for row in rows:
        if row[0] == "label":
            name = row[1]
            if not name.startswith(".L"):
                cur = name
                funcs[cur] = []
            else:
                funcs.setdefault(cur, []).append(row)
            continue
        mn, ops = row[1], row[2]
        if mn.startswith("j") or mn.startswith("call"):
            t = re.match(r"^([0-9a-f]+) <([^>]+)>$", ops)
            if t:
                addr = int(t.group(1), 16)
                ops = addr_label.get(addr, f".Laddr_{addr:x}")
        funcs[cur].append(("insn", mn, ops))
    return funcs


def is_branch(mn):
    return mn.startswith("j")


def label_index(entries):
    return {e[1]: i for i, e in enumerate(entries) if e[0] == "label"}


def back_edges(entries):
    """(head index, branch index) for every branch to a label above it."""
    labels = label_index(entries)
    out = []
    for j, e in enumerate(entries):
        if e[0] == "insn" and is_branch(e[1]) and e[2] in labels and labels[e[2]] < j:
            out.append((labels[e[2]], j))
    return out


def straight_trace(entries, head, tail):
    """The instructions from `head` to the back edge at `tail` when every conditional
    branch in between falls through; None when an unconditional jump, call or return
    leaves the path (then the span is not one iteration of a loop)."""
    out = []
    for i in range(head, tail + 1):
        e = entries[i]
        if e[0] != "insn":
            continue
        if i != tail and (e[1] in ("jmp", "jmpq", "ret", "retq") or e[1].startswith("call")):
            return None
        out.append((e[1], e[2]))
    return out


def count(trace, names):
    return sum(1 for mn, _ in trace if mn in names)


def clmuls(trace):
    return sum(1 for mn, _ in trace if mn.startswith("vpclmul"))


def aes_rounds(trace):
    """(rounds, vectors) when the trace holds whole AES steps: each vector gets NR - 1
    VAESENC and one VAESENCLAST."""
    last = count(trace, ("vaesenclast",))
    mid = count(trace, ("vaesenc",))
    if last == 0 or mid % last:
        return None
    return mid // last + 1, last


# ---------------------------------------------------------------------------------------
# Our loops
# ---------------------------------------------------------------------------------------


def demangle(names):
    try:
        res = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True)
        return dict(zip(names, res.stdout.splitlines()))
    except (OSError, subprocess.CalledProcessError):
        return {n: n for n in names}


def pretty_name(demangled):
    return re.sub(r"\[[0-9a-f]+\]", "", demangled).replace(": bool", "")


def loop_traces(funcs, sym, seen):
    """Straight-line loop iterations in `sym` and in the Vaes256 functions it calls or
    jumps to (so a helper the compiler stops inlining is still searched, and so is a
    kernel reached by a tail call, `je`/`jmp` to the function, as the entry point's
    dispatch on the key size compiles to when nothing follows the call): (symbol, head
    label, trace)."""
    if sym in seen or sym not in funcs:
        return []
    seen.add(sym)
    entries = funcs[sym]
    out = []
    for head, tail in back_edges(entries):
        trace = straight_trace(entries, head, tail)
        if trace is not None:
            out.append((sym, entries[head][1], trace))
    for e in entries:
        if e[0] == "insn" and e[1].startswith(("call", "j")) and "vaes256_gcm" in e[2]:
            out += loop_traces(funcs, e[2].split("@")[0], seen)
    return out


def find_ours(asm_path):
    funcs = parse_rustc_asm(asm_path)
    names = [n for n in funcs if "vaes256_gcm" in n]
    dem = demangle(names)
    ops = {}
    for n in names:
        if "seal_or_open" not in n:
            continue
        enc = re.search(r"seal_or_open::<(true|false)", dem[n])
        if enc is not None:
            flag = enc.group(1) == "true"
        else:  # no demangler: v0 mangling spells the const bool Kb1_ / Kb0_
            enc = re.search(r"seal_or_openKb([01])_", n)
            if enc is None:
                sys.exit(f"mca.py: cannot tell seal from open in {n} (is symbol-mangling-version=v0 set?)")
            flag = enc.group(1) == "1"
        ops["seal" if flag else "open"] = n
    if set(ops) != {"seal", "open"}:
        sys.exit(f"mca.py: expected one seal and one open instantiation of vaes256_gcm::seal_or_open, found {sorted(ops)}")

    found, notes = {}, []
    for op in ("seal", "open"):
        cands = {}
        for sym, label, trace in loop_traces(funcs, ops[op], set()):
            shape = aes_rounds(trace)
            if shape is None:
                continue
            nr, vecs = shape
            # Whole AES steps over at least four 256-bit vectors (8 blocks) that also hash:
            # the warm-up steps of the seal and the plain CTR paths have no multiplies.
            if vecs < 4 or nr not in (10, 12, 14) or clmuls(trace) == 0:
                continue
            cands.setdefault(nr, []).append({"vecs": vecs, "clmul": clmuls(trace), "insns": len(trace),
                                             "label": label, "func": pretty_name(dem.get(sym, sym)), "trace": trace})
        for nr in (10, 14):
            group = cands.get(nr, [])
            if not group:
                sys.exit(f"mca.py: no hashing AES-{'128' if nr == 10 else '256'} bulk loop under "
                         f"{pretty_name(dem[ops[op]])}: the kernel changed shape, see find_ours")
            # The widest step, then the most multiplies (the hashing bulk loop), then the
            # shortest path (the counter update's fast path).
            group.sort(key=lambda c: (-c["vecs"], -c["clmul"], c["insns"]))
            chosen = group[0]
            found[(op, nr)] = {"trace": chosen["trace"], "blocks": 2 * chosen["vecs"], "label": chosen["label"]}
            notes.append({
                "who": "ours", "op": op, "nr": nr, "func": chosen["func"], "label": chosen["label"],
                "insns": chosen["insns"], "clmul": chosen["clmul"], "blocks": 2 * chosen["vecs"],
                "others": [(c["label"], c["insns"], c["clmul"]) for c in group[1:]],
            })
    return found, notes


# ---------------------------------------------------------------------------------------
# ring's loops
# ---------------------------------------------------------------------------------------


def ring_trace(entries, head, nr):
    """ring's loop `.Lcrypt_loop_4x__funcN` for an NR-round key: follows the key-size
    branches (`cmp $24, %r10d` with r10d = 4*NR - 20, set in the prologue) as a CPU with
    that key would, every other conditional branch falling through, up to the back edge."""
    labels = label_index(entries)
    loop = entries[head][1]
    r10 = 4 * nr - 20
    flags = None
    out, i, steps = [], head, 0
    while i < len(entries):
        steps += 1
        if steps > 10000:
            sys.exit("mca.py: ring's loop does not close")
        e = entries[i]
        i += 1
        if e[0] != "insn":
            continue
        mn, ops = e[1], e[2]
        out.append((mn, ops))
        m = re.match(r"^\$(-?0x[0-9a-f]+|-?\d+),%r10d$", ops)
        if mn.startswith("cmp") and m:
            flags = r10 - int(m.group(1), 0)
            continue
        if not is_branch(mn):
            continue
        if ops == loop:
            return out
        taken = mn == "jmp"
        if flags is not None and mn in ("jl", "je", "jg", "jle", "jge", "jne"):
            taken = {"jl": flags < 0, "je": flags == 0, "jg": flags > 0, "jle": flags <= 0,
                     "jge": flags >= 0, "jne": flags != 0}[mn]
        if taken:
            i = labels[ops]
    sys.exit("mca.py: ring's loop runs off the function")


def find_ring(objdump_text):
    funcs = parse_objdump(objdump_text)
    found, notes = {}, []
    for op, fn in (("seal", "aes_gcm_enc_update_vaes_avx2"), ("open", "aes_gcm_dec_update_vaes_avx2")):
        entries = funcs.get(fn)
        if not entries:
            sys.exit(f"mca.py: {fn} not in ring's object")
        if not any(e[0] == "insn" and e[1] == "lea" and e[2].startswith("-0x14(,%r10,4),%r10d") for e in entries):
            sys.exit(f"mca.py: {fn} no longer sets r10d = 4*rounds - 20; update ring_trace")
        heads = [i for i, e in enumerate(entries) if e[0] == "label" and e[1].startswith(".Lcrypt_loop_4x__func")]
        if len(heads) != 1:
            sys.exit(f"mca.py: expected one .Lcrypt_loop_4x label in {fn}, found {len(heads)}")
        for nr in (10, 14):
            trace = ring_trace(entries, heads[0], nr)
            shape = aes_rounds(trace)
            if shape is None or shape[0] != nr:
                sys.exit(f"mca.py: ring's {fn} path for {nr} rounds has {shape} (rounds, vectors)")
            found[(op, nr)] = {"trace": trace, "blocks": 2 * shape[1], "label": entries[heads[0]][1]}
            notes.append({"who": "ring", "op": op, "nr": nr, "func": fn, "label": entries[heads[0]][1],
                          "insns": len(trace), "clmul": clmuls(trace), "blocks": 2 * shape[1]})
    return found, notes


# ---------------------------------------------------------------------------------------
# llvm-mca
# ---------------------------------------------------------------------------------------


def mca_cmd(mca, cpu, path):
    return [mca, "-mtriple=x86_64-unknown-linux-gnu", f"-mcpu={cpu}", f"-iterations={SIM_ITERATIONS}",
            "-bottleneck-analysis", path]


def run_mca(mca, cpu, path):
    res = subprocess.run(mca_cmd(mca, cpu, path), capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"mca.py: llvm-mca failed on {path} for {cpu}:\n{res.stderr}")
    out = res.stdout
    num = lambda key: float(re.search(rf"^{key}:\s+([\d.]+)", out, re.M).group(1))
    r = {
        "iterations": num("Iterations"), "instructions": num("Instructions"),
        "cycles": num("Total Cycles"), "uops": num("Total uOps"),
        "dispatch": num("Dispatch Width"), "rthroughput": num("Block RThroughput"),
    }
    res_names = dict(re.findall(r"^\[([\d.]+)\]\s+- (\w+)", out, re.M))
    m = re.search(r"Resource pressure per iteration:\n(.*)\n(.*)\n", out)
    cols = re.findall(r"\[([\d.]+)\]", m.group(1))
    vals = m.group(2).split()
    pressure = {}
    for c, v in zip(cols, vals):
        name = res_names[c]
        pressure[name] = pressure.get(name, 0.0) + (0.0 if v == "-" else float(v))
    r["pressure"] = pressure
    r["instances"] = {n: sum(1 for c in cols if res_names[c] == n) for n in pressure}
    m = re.search(r"Resource Pressure\s+\[\s*([\d.]+)%\s*\]", out)
    r["res_pct"] = float(m.group(1)) if m else None
    m = re.search(r"Data Dependencies:\s+\[\s*([\d.]+)%\s*\]", out)
    r["dep_pct"] = float(m.group(1)) if m else None
    return r


def short(name):
    return re.sub(r"^(Zn3|Zn4|SPR|ICX|SKX)", "", name)


def limiter(r):
    """The resource whose busiest unit comes closest to the simulated cycles per
    iteration, or dispatch, or (when no unit comes close) the dependency chains."""
    cyc = r["cycles"] / r["iterations"]
    busiest = []
    for name, p in r["pressure"].items():
        busiest.append((p / r["instances"][name], short(name) + ("" if r["instances"][name] == 1 else f" (x{r['instances'][name]})")))
    busiest.append((r["uops"] / r["iterations"] / r["dispatch"], "dispatch"))
    busiest.sort(reverse=True)
    top, name = busiest[0]
    ties = sorted(n for v, n in busiest if v >= 0.99 * top)
    share = top / cyc
    text = "/".join(ties) + f" {100 * share:.0f}% busy"
    if share < 0.85:
        dep = r["dep_pct"]
        text += f"; dependency chains ({dep:.0f}% of cycles)" if dep is not None else "; dependency chains"
    return text


# ---------------------------------------------------------------------------------------
# Instruction mix
# ---------------------------------------------------------------------------------------


def mem_operand(ops):
    m = MEM.search(ops)
    return m.group(1) if m else None


def mix(trace):
    c = dict(aes=0, clmul=0, xor=0, shuffle=0, vec_other=0, vmove=0, scalar=0,
             loads=0, stack_loads=0, stores=0, stack_stores=0)
    for mn, ops in trace:
        mem = None if mn.startswith(("lea", "nop", "prefetch")) else mem_operand(ops)
        if mem:
            stack = bool(re.search(r"\(%(rsp|rbp)", mem))
            operands = [o.strip() for o in re.split(r",(?![^(]*\))", ops)]
            is_store = mn.startswith(("vmov", "mov")) and operands[-1] == mem
            if is_store:
                c["stores"] += 1
                c["stack_stores"] += stack
            else:
                c["loads"] += 1
                c["stack_loads"] += stack
        if mn in AES:
            c["aes"] += 1
        elif mn.startswith("vpclmul"):
            c["clmul"] += 1
        elif mn in XOR:
            c["xor"] += 1
        elif mn.startswith(SHUFFLE_PREFIXES) and not mn.startswith("vbroadcasti"):
            c["shuffle"] += 1
        elif mn.startswith(("vmov", "vbroadcast")):
            c["vmove"] += 1
        elif mn.startswith("v"):
            c["vec_other"] += 1
        else:
            c["scalar"] += 1
    return c


def mix_per16(info):
    """`mix` of a loop, scaled to 16 blocks, with the instruction count."""
    c = mix(info["trace"])
    c["instructions"] = len(info["trace"])
    return {k: v * 16 / info["blocks"] for k, v in c.items()}


# ---------------------------------------------------------------------------------------
# Host check of the model: a few instruction mixes, timed in core cycles
# ---------------------------------------------------------------------------------------


def calib_kernels():
    """(name, AES count, VPCLMULQDQ count, instructions) for each check mix. Independent
    instructions (sources fixed, destinations only written), so each mix measures issue
    throughput alone. Rows 1-3 are the mixes issue 13 quotes from a Zen 3; the others tell
    apart the ways the multiplier could share the AES pipes."""
    aes = lambda k: f"vaesenc %ymm15, %ymm14, %ymm{k % 8}"
    clm = lambda k: f"vpclmulqdq $0x00, %ymm15, %ymm14, %ymm{8 + k % 4}"
    xor = lambda k: f"vpxor %ymm15, %ymm14, %ymm{12 + k % 2}"

    def interleave(n_aes, n_clm, n_xor=0):
        out, a, c, x = [], 0, 0, 0
        while a < n_aes or c < n_clm or x < n_xor:
            for _ in range(2):
                if a < n_aes:
                    out.append(aes(a))
                    a += 1
            if c < n_clm:
                out.append(clm(c))
                c += 1
            for _ in range(2):
                if x < n_xor:
                    out.append(xor(x))
                    x += 1
        return out

    mixes = [(8, 0, 0), (0, 4, 0), (8, 4, 0), (12, 4, 0), (16, 4, 0), (24, 4, 0), (16, 8, 0), (8, 4, 8)]
    out = []
    for a, c, x in mixes:
        name = " + ".join(f"{n} {what}" for n, what in ((a, "VAESENC"), (c, "VPCLMULQDQ"), (x, "VPXOR")) if n)
        out.append((name + " ymm", a, c, interleave(a, c, x)))
    return out


def rate_rule(n_aes, n_clmul):
    """Cycles the measured rates allow: the two AES pipes issue one VAESENC or one
    VPCLMULQDQ each per cycle, and the one multiplier takes a 256-bit VPCLMULQDQ every
    two cycles. Everything else (other vector work, loads, dependencies) is left out."""
    return max((n_aes + n_clmul) / 2, 2 * n_clmul)


CALIB_C = r"""
#include <stdint.h>
#include <stdio.h>
#include <time.h>
static double now(void) {
    struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}
/* 100 dependent 1-cycle adds per iteration: its time gives the core clock. Register
   adds: Intel's cores from Golden Cove on fold chains of `add $imm` at rename. */
static double chain(uint64_t n) {
    double t = now(); uint64_t x = 0, one = 1;
    __asm__ volatile("1:\n" ".rept 100\n add %2, %1\n .endr\n" "dec %0\n jnz 1b\n"
                     : "+r"(n), "+r"(x) : "r"(one) : "cc");
    return now() - t;
}
static void sort(double *v, int n) {
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (v[j] < v[i]) { double s = v[i]; v[i] = v[j]; v[j] = s; }
}
@KERNELS@
int main(void) {
    const uint64_t nc = 200000, nk = 2000000;
    double ghz[@NK@ * @ROUNDS@];
    for (int k = 0; k < @NK@; k++) {
        double best[@ROUNDS@];
        for (int r = 0; r < @ROUNDS@; r++) {
            double c0 = chain(nc), tk = kernels[k](nk), c1 = chain(nc);
            double cycle = (c0 + c1) / 2 / (100.0 * nc);
            best[r] = tk / nk / cycle;
            ghz[k * @ROUNDS@ + r] = 1e-9 / cycle;
        }
        /* The fastest run: interference on a shared machine only ever adds time. */
        sort(best, @ROUNDS@);
        printf("%d %.2f\n", k, best[0]);
    }
    sort(ghz, @NK@ * @ROUNDS@);
    printf("clock %.3f\n", ghz[@NK@ * @ROUNDS@ / 2]);
    return 0;
}
"""


def host_cpu():
    info = {}
    try:
        for line in open("/proc/cpuinfo"):
            k, _, v = line.partition(":")
            k = k.strip()
            if k in ("model name", "cpu family", "model", "flags") and k not in info:
                info[k] = v.strip()
    except OSError:
        pass
    return info


def measure_calib(kernels, rounds=7):
    flags = set(host_cpu().get("flags", "").split())
    if not {"vaes", "vpclmulqdq", "avx2"} <= flags:
        return None
    funcs = []
    for i, (_, _, _, body) in enumerate(kernels):
        asm = "".join(f' "{ins.replace("%", "%%")}\\n"' for ins in body)
        funcs.append(
            f"static double k{i}(uint64_t n) {{ double t = now();\n"
            f'  __asm__ volatile("1:\\n"{asm} "dec %0\\n jnz 1b\\n" : "+r"(n) :: "cc", '
            + ", ".join(f'"xmm{r}"' for r in range(16)) + ");\n  return now() - t; }\n"
        )
    src = CALIB_C.replace("@KERNELS@", "".join(funcs) + "static double (*kernels[])(uint64_t) = {"
                          + ", ".join(f"k{i}" for i in range(len(kernels))) + "};")
    src = src.replace("@NK@", str(len(kernels))).replace("@ROUNDS@", str(rounds))
    with tempfile.TemporaryDirectory() as d:
        c, exe = os.path.join(d, "calib.c"), os.path.join(d, "calib")
        open(c, "w").write(src)
        subprocess.run(["cc", "-O2", "-o", exe, c], check=True)
        out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    res = {}
    for line in out.splitlines():
        k, v = line.split()
        res["clock_ghz" if k == "clock" else int(k)] = float(v)
    return res


# ---------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------


def fmt(x, nd=1):
    return f"{x:.{nd}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ours-asm", required=True, help="gcm-core assembly (rustc --emit asm, v0 mangling)")
    ap.add_argument("--ring-objdump", required=True, help="objdump -d of ring's aes-gcm-avx2 object")
    ap.add_argument("--mca", required=True, help="llvm-mca binary")
    ap.add_argument("--cpus", required=True, help="comma-separated -mcpu values, first is the main one")
    ap.add_argument("--out-dir", required=True, help="where to keep the extracted loops")
    ap.add_argument("--meta", action="append", default=[], help="key=value lines for the header")
    ap.add_argument("--no-measure", action="store_true", help="skip timing the check mixes on the host")
    ap.add_argument("--speed-csv", help="a `speed --csv` file with ours-vaes256 and ring rows, measured on this host")
    ap.add_argument("--speed-cmd", default="speed", help="the command that wrote --speed-csv, for the text")
    args = ap.parse_args()
    meta = dict(m.split("=", 1) for m in args.meta)
    cpus = args.cpus.split(",")
    main_cpu = cpus[0]
    os.makedirs(args.out_dir, exist_ok=True)

    ours, ours_notes = find_ours(args.ours_asm)
    ring, ring_notes = find_ring(open(args.ring_objdump).read())

    loops = []  # (impl, op, nr, info, file)
    for impl, found in (("ours", ours), ("ring", ring)):
        for op in ("seal", "open"):
            for nr in (10, 14):
                info = found[(op, nr)]
                path = os.path.join(args.out_dir, f"{impl}-{op}-aes{128 if nr == 10 else 256}.s")
                with open(path, "w") as f:
                    f.write(f"# {impl} {op} AES-{128 if nr == 10 else 256}: one iteration of the main loop "
                            f"({info['blocks']} blocks), from {info['label']}; generated by benches/mca.sh\n")
                    for mn, ops in info["trace"]:
                        f.write(f"\t{mn}\t{ops}\n" if ops else f"\t{mn}\n")
                loops.append((impl, op, nr, info, path))

    results = {}
    for cpu in cpus:
        for impl, op, nr, info, path in loops:
            log(f"llvm-mca {cpu} {os.path.basename(path)}")
            results[(cpu, impl, op, nr)] = run_mca(args.mca, cpu, path)

    kernels = calib_kernels()
    calib_paths = []
    for i, (_, _, _, body) in enumerate(kernels):
        p = os.path.join(args.out_dir, f"check-{i}.s")
        open(p, "w").write("".join(f"\t{x}\n" for x in body))
        calib_paths.append(p)
    calib_pred = {(cpu, i): run_mca(args.mca, cpu, p) for cpu in cpus for i, p in enumerate(calib_paths)}
    measured = None if args.no_measure else measure_calib(kernels)

    key = lambda nr: "AES-128" if nr == 10 else "AES-256"
    rel_dir = meta.get("out_dir_display", args.out_dir)
    mca_name = os.path.basename(args.mca)
    p = print

    p("## Static proxy: llvm-mca, ours (Vaes256) against ring's VAES-AVX2 loop")
    p()
    p(f"Generated by `bash benches/mca.sh` on {meta.get('date', '?')}; this section is its output. "
      "**Every cycle figure in it is predicted by llvm-mca's scheduling models, not measured**, "
      "except the host timings in the two sections that say so (\"The model against the hardware\", "
      "\"The proxy against this host's measurement\"), which check the model. "
      "The proxy exists to pick the design that wins on AMD Zen 3 when no Zen 3 is at hand; read "
      "it with the caveat below.")
    p()
    p(f"- llvm-mca: `{args.mca}` ({meta.get('llvm_version', '?')}); CPU models: "
      + ", ".join(f"`{c}`" for c in cpus) + (f" (not in this LLVM: {meta['missing_cpus']})" if meta.get("missing_cpus") else ""))
    p(f"- ours: gcm-core at {meta.get('commit', '?')}, {meta.get('rustc', '?')}, release profile, "
      "`cargo rustc -p gcm-core --release --example seal_open -- --emit asm=<file> -C symbol-mangling-version=v0` "
      "(the kernels are instantiated in the crate that calls `GcmKey`; "
      "v0 names tell `seal_or_open::<true>` from `::<false>`; the benchmarks link the same "
      "code through thin LTO, which may schedule it slightly differently)")
    p(f"- ring: {meta.get('ring', '?')}, `pregenerated/aes-gcm-avx2-x86_64-elf.S` assembled with "
      "`gcc -c -Wa,-L` (its `.byte`-encoded VAES/VPCLMULQDQ decoded by `objdump -d --no-show-raw-insn`, AT&T)")
    p(f"- each loop is one iteration of the steady state, cut out as straight-line code and kept in `{rel_dir}/`; "
      "re-run one by hand with")
    p()
    p("```")
    p(" ".join(shlex.quote(x) for x in mca_cmd(mca_name, main_cpu, f"{rel_dir}/ours-seal-aes128.s")))
    p("```")
    p()
    ob = sorted({ours[k]["blocks"] for k in ours})
    rb = sorted({ring[k]["blocks"] for k in ring})
    p(f"  One iteration of ours takes {'/'.join(map(str, ob))} blocks, of ring's {'/'.join(map(str, rb))} "
      "(blocks = 2 x the 256-bit vectors each AES round covers); every figure below is scaled to 16 blocks.")
    p()

    # --- model check
    p("### The model against the hardware")
    p()
    hc = host_cpu()
    host = f"{hc.get('model name', '?')}, family {hc.get('cpu family', '?')} model {hc.get('model', '?')}"
    p("Independent 256-bit instructions in a loop, cycles per iteration: predicted by each model, "
      f"measured on this host ({host}; core cycles from a chain of dependent adds timed around each run, "
      "fastest of 7 runs), and the `rule` below. Issue 13 quotes the first three mixes measured on a Zen 3 "
      "(EPYC, family 25 model 1): two 256-bit VAESENC per cycle, one 256-bit VPCLMULQDQ every 2 cycles, "
      "8 VAESENC + 4 VPCLMULQDQ in 8 cycles.")
    p()
    p("| mix | " + " | ".join(f"{c} predicted" for c in cpus) + " | measured here | rule |")
    p("|---|" + "---:|" * (len(cpus) + 2))
    for i, (name, n_aes, n_clm, _) in enumerate(kernels):
        cells = [fmt(calib_pred[(c, i)]["cycles"] / calib_pred[(c, i)]["iterations"]) for c in cpus]
        m = fmt(measured[i]) if measured else (
            "not measured (MCA_MEASURE=0)" if args.no_measure else "not measured (no VAES/VPCLMULQDQ here)")
        p(f"| {name} | " + " | ".join(cells) + f" | {m} | {fmt(rate_rule(n_aes, n_clm))} |")
    p()
    one = next(i for i, k in enumerate(kernels) if k[1] == 0)
    both = next(i for i, k in enumerate(kernels) if k[1] == 8 and k[2] == 4)
    zc = calib_pred[(main_cpu, one)]
    n_one = kernels[one][2]
    fp = {short(n): v / n_one for n, v in zc["pressure"].items() if v > 0}
    fp_text = ", ".join(f"{n} {v:g}" for n, v in sorted(fp.items()))
    pred8 = calib_pred[(main_cpu, both)]["cycles"] / calib_pred[(main_cpu, both)]["iterations"]
    here8 = "not measured here" if measured is None else f"{measured[both]:.1f} here"
    def ratios(pred):
        return [measured[i] / pred(i) for i in range(len(kernels))]
    def worst_miss(pred):
        return 100 * max(abs(r - 1) for r in ratios(pred))
    rule_miss = model_miss = rule_ratios = None
    if measured is not None:
        rule_ratios = ratios(lambda i: rate_rule(kernels[i][1], kernels[i][2]))
        rule_miss = 100 * max(abs(r - 1) for r in rule_ratios)
        model_miss = worst_miss(lambda i: calib_pred[(main_cpu, i)]["cycles"] / calib_pred[(main_cpu, i)]["iterations"])
    p(f"The {main_cpu} model charges each 256-bit VPCLMULQDQ {zc['uops'] / zc['iterations'] / n_one:g} uops and "
      f"busy cycles on {fp_text}: the pipes VAESENC uses. So it predicts 8 VAESENC + 4 VPCLMULQDQ at "
      f"{pred8:.0f} cycles, where the issue's Zen 3 measurement says 8 ({here8}). The `rule` is simpler: "
      "each 256-bit VPCLMULQDQ takes one issue slot of the two AES pipes, and the one multiplier accepts "
      "one every 2 cycles, so cycles = max((VAESENC + VPCLMULQDQ) / 2, 2 x VPCLMULQDQ). It was fitted on "
      "an AMD Zen 4 (EPYC, family 25 model 17), where it came within 11% of every row and the model "
      "overcharged the multiplies.")
    if measured is not None:
        p()
        if rule_miss <= 15:
            p(f"On this host the rule comes within {rule_miss:.0f}% of every row, the {main_cpu} model within "
              f"{model_miss:.0f}%: the model overcharges every loop for its multiplies on FP0/FP1, so between "
              "loops with as many multiplies its ratios are the fairer part, and where the counts differ the "
              "rule's price (2 cycles of the multiplier per VPCLMULQDQ, one AES-pipe slot) is the measured one.")
        elif max(rule_ratios) > 1.15:
            p(f"On this host the rule misses a row by up to {rule_miss:.0f}%, the {main_cpu} model by up to "
              f"{model_miss:.0f}%: here a VPCLMULQDQ costs the AES pipes more than the one slot the rule "
              "charges (the rows measured here say how much), so the rule's figures below are too low for "
              "this CPU, and the further off the more multiplies a loop has.")
        else:
            # The rule overcharges: the multiplies cost less than it says (an Intel core, where
            # VPCLMULQDQ issues on a port of its own, one a cycle).
            misses = {c: worst_miss(lambda i, c=c: calib_pred[(c, i)]["cycles"] / calib_pred[(c, i)]["iterations"])
                      for c in cpus}
            best = min(misses, key=misses.get)
            p(f"On this host the rule overcharges rows by up to {rule_miss:.0f}%, the {main_cpu} model by up to "
              f"{model_miss:.0f}%: here the multiplies cost less than the rule's price (the rows with "
              "VPCLMULQDQ run faster than it says, as with one multiply a cycle beside the AES rounds), so the "
              "rule's figures below are too high for this CPU, and the further off the more multiplies a "
              f"loop has. Of the models, `{best}` comes closest here (within {misses[best]:.0f}% of every "
              "row): read its column.")
    p()
    p("The rule is not a prediction either: it counts only AES rounds and multiplies, so where its prices "
      "hold it is a lower bound: compare it with the real loops' cycles measured in the next sections, "
      "where a measurement was made.")
    p()

    # --- main table
    p("### Predicted cycles per 16 blocks")
    p()
    p("Simulated: llvm-mca's total cycles / iterations, scaled to 16 blocks; RThroughput: its "
      "`Block RThroughput` (the bound from port pressure alone), scaled the same way. "
      "`ring / ours` > 1 means ours is predicted faster.")
    p()
    pred_ratio = {}
    p("| CPU model | key | op | ours simulated | ring simulated | ring / ours | ours RThroughput | ring RThroughput | ours limited by | ring limited by |")
    p("|---|---|---|---:|---:|---:|---:|---:|---|---|")
    for cpu in cpus:
        for nr in (10, 14):
            for op in ("seal", "open"):
                ro, rr = results[(cpu, "ours", op, nr)], results[(cpu, "ring", op, nr)]
                so = 16 / ours[(op, nr)]["blocks"]
                sr = 16 / ring[(op, nr)]["blocks"]
                co = ro["cycles"] / ro["iterations"] * so
                cr = rr["cycles"] / rr["iterations"] * sr
                pred_ratio[(cpu, op, nr)] = cr / co
                p(f"| {cpu} | {key(nr)} | {op} | {fmt(co)} | {fmt(cr)} | {cr / co:.2f} | "
                  f"{fmt(ro['rthroughput'] * so)} | {fmt(rr['rthroughput'] * sr)} | {limiter(ro)} | {limiter(rr)} |")
    p()
    for cpu in cpus:
        rs = [pred_ratio[(cpu, op, nr)] for op in ("seal", "open") for nr in (10, 14)]
        p(f"- {cpu}: ring / ours from {min(rs):.2f} to {max(rs):.2f} over the four loops.")
    p()
    p("`limited by`: the unit (or dispatch) whose busy cycles come closest to the simulated cycles, as a "
      "share of them; below 85% the loop waits on dependency chains rather than on a unit, and the share "
      "of cycles llvm-mca's `-bottleneck-analysis` blames on data dependencies is given.")
    p()

    p("### The measured-rate rule on the same loops (Zen 3 / Zen 4, not llvm-mca)")
    p()
    p("`rule` = max((AES + VPCLMULQDQ) / 2, 2 x VPCLMULQDQ) per 16 blocks, from the instruction counts and "
      "the rates measured above: a lower bound that counts only AES rounds and multiplies.")
    p()
    p("| key | op | ours AES | ours VPCLMULQDQ | ours rule | ring AES | ring VPCLMULQDQ | ring rule | ring / ours |")
    p("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for nr in (10, 14):
        for op in ("seal", "open"):
            cells, rules = [], []
            for found in (ours, ring):
                c = mix_per16(found[(op, nr)])
                a, m = c["aes"], c["clmul"]
                rules.append(rate_rule(a, m))
                cells += [f"{a:.0f}", f"{m:.0f}", fmt(rules[-1])]
            pred_ratio[("rule", op, nr)] = rules[1] / rules[0]
            p(f"| {key(nr)} | {op} | " + " | ".join(cells) + f" | {rules[1] / rules[0]:.2f} |")
    p()
    measured_loops(args, cpus, pred_ratio, measured, host, key)

    # --- uops and pressure
    for cpu in cpus:
        names = []
        for impl, op, nr, info, _ in loops:
            for n, v in results[(cpu, impl, op, nr)]["pressure"].items():
                if v > 0 and n not in names:
                    names.append(n)
        if cpu == cpus[0]:
            p("### Instructions, uops and port pressure per 16 blocks")
            p()
            p("Per CPU model. Resource pressure is llvm-mca's busy cycles per unit, summed over the loop (a "
              "group of several units, e.g. the load ports, is summed over them; `xN` says how many).")
            p()
        p(f"#### {cpu}")
        p()
        hdr = [short(n) + (f" x{results[(cpu, 'ours', 'seal', 10)]['instances'][n]}" if results[(cpu, 'ours', 'seal', 10)]["instances"].get(n, 1) > 1 else "") for n in names]
        p("| loop | key | op | instructions | uops | " + " | ".join(hdr) + " |")
        p("|---|---|---|---:|---:|" + "---:|" * len(names))
        for nr in (10, 14):
            for op in ("seal", "open"):
                for impl, found in (("ours", ours), ("ring", ring)):
                    r = results[(cpu, impl, op, nr)]
                    s = 16 / found[(op, nr)]["blocks"] / r["iterations"]
                    cells = [fmt(r["pressure"].get(n, 0.0) * 16 / found[(op, nr)]["blocks"]) for n in names]
                    p(f"| {impl} | {key(nr)} | {op} | {r['instructions'] * s:.0f} | {r['uops'] * s:.0f} | " + " | ".join(cells) + " |")
        p()

    # --- instruction mix
    p("### Instruction mix per 16 blocks")
    p()
    p("Counted from the loop text (the same for every CPU model). AES: VAESENC + VAESENCLAST; XOR: "
      "VPXOR/VXORPS/VXORPD; shuffles: VPSHUFB, VPSHUFD, VSHUFPD, VPUNPCK*, VEXTRACTI128, VPERM*, byte shifts, "
      "VPBLENDD; vector moves: VMOVDQA/VMOVDQU/VMOVAP*/VBROADCASTI128 (loads, stores and register copies); "
      "loads: instructions reading memory (a folded operand counts once); from the stack: `(%rsp)`/`(%rbp)` "
      "operands, i.e. round keys and H powers kept on the stack plus spill reloads; stores to the stack are spills.")
    p()
    p("| loop | key | op | instructions | AES | VPCLMULQDQ | XOR | shuffles | other vector | vector moves | scalar + branch | loads | of which stack | stores | of which stack |")
    p("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for nr in (10, 14):
        for op in ("seal", "open"):
            for impl, found in (("ours", ours), ("ring", ring)):
                c = mix_per16(found[(op, nr)])
                v = lambda k: f"{c[k]:.0f}"
                p(f"| {impl} | {key(nr)} | {op} | {v('instructions')} | {v('aes')} | {v('clmul')} | {v('xor')} | "
                  f"{v('shuffle')} | {v('vec_other')} | {v('vmove')} | {v('scalar')} | {v('loads')} | {v('stack_loads')} | "
                  f"{v('stores')} | {v('stack_stores')} |")
    p()

    # --- identification
    p("### How the loops were found")
    p()
    p("Ours: the two instantiations of `gcm_core::x86_64::vaes256_gcm::seal_or_open` (v0 symbol names, "
      "demangled: `::<true>` seals, `::<false>` opens) and any Vaes256 function they call (the "
      "`function` column below says where each loop was found). Every back edge (a branch to a label above it) whose path from that label "
      "falls straight through to the branch, with no unconditional jump, call or return on the way, is one "
      "iteration of some loop. Kept: those whose AES instructions form whole steps over at least four "
      "vectors, each vector with NR - 1 VAESENC and one VAESENCLAST (which gives NR: 10 is AES-128, 14 "
      "AES-256; 12, AES-192, is not reported), and that multiply (the seal's two warm-up steps do not). "
      "Chosen: the widest step, then the most VPCLMULQDQ, then the shortest path."
      + (" Where two paths close the same loop with as many multiplies (`other paths` below), the longer "
         "adds the slower counter update that `Counters` runs only when a counter's low bits may carry "
         "(2 steps in 64) or the counter is secret (nonces other than 96 bits)."
         if any(n.get("others") for n in ours_notes) else ""))
    p()
    p("ring: `.Lcrypt_loop_4x__funcN` in `aes_gcm_enc_update_vaes_avx2` (seal) and `aes_gcm_dec_update_vaes_avx2` "
      "(open), followed from the label to the back edge to it, taking the key-size branches "
      "(`cmp $24,%r10d`, with r10d = 4 * rounds - 20 from the prologue) as an AES-128 or AES-256 key would, so "
      "AES-128 skips the four extra rounds; the rounds found are checked against the key size.")
    p()
    p("| loop | op | key | function | from label | instructions per iteration | VPCLMULQDQ | other paths (label: instructions, VPCLMULQDQ) |")
    p("|---|---|---|---|---|---:|---:|---|")
    for n in ours_notes + ring_notes:
        others = "; ".join(f"`{lab}`: {ni}, {cl}" for lab, ni, cl in n.get("others", [])) or "-"
        p(f"| {n['who']} | {n['op']} | {key(n['nr'])} | `{n['func']}` | `{n['label']}` | {n['insns']} | {n['clmul']} | {others} |")
    p()


def winner(ratio):
    """ring / ours (or ours / ring in time): who wins, None for a tie within 1%."""
    return None if abs(ratio - 1) < 0.01 else ratio > 1


def measured_loops(args, cpus, pred_ratio, measured, host, key):
    """The proxy's check where the host can run both: ours-vaes256 and ring timed by the
    speed tool at its largest size, against the predicted ratios."""
    p = print
    p("### The proxy against this host's measurement")
    p()
    if not args.speed_csv:
        p("Not measured in this run (`MCA_SPEED=1 bash benches/mca.sh` adds it: it times ours with the "
          "Vaes256 back end forced against ring with the speed tool). The speed tables elsewhere in this "
          "file measure the same pair, on the CPU they name.")
        p()
        return
    import csv
    rows = list(csv.DictReader(open(args.speed_csv)))
    big = max(int(r["bytes"]) for r in rows)
    mb = {(r["algorithm"], r["operation"], r["implementation"]): float(r["mb_per_s_median"])
          for r in rows if int(r["bytes"]) == big}
    ghz = measured.get("clock_ghz") if measured else None
    p(f"`{args.speed_cmd}` on this host ({host}), {big}-byte messages, MB/s medians; `measured` is "
      "ours / ring in speed, comparable with the predicted `ring / ours` cycle ratios. Cycles per 16 blocks "
      + (f"take the core clock from the add chain above ({ghz:.2f} GHz, measured apart from the speed run, "
         "so read them as +-10%)." if ghz else "are not given (no clock measured).")
      + " Measured, not predicted.")
    p()
    cols = [c for c in cpus] + ["rule"]
    p("| key | op | ours-vaes256 MB/s | ring MB/s | measured | " + " | ".join(f"{c} predicted" for c in cols)
      + " | ours cycles / 16 blocks | ring cycles / 16 blocks |")
    p("|---|---|---:|---:|---:|" + "---:|" * len(cols) + "---:|---:|")
    agree = {c: 0 for c in cols}
    n = 0
    for nr in (10, 14):
        alg = "AES-128-GCM" if nr == 10 else "AES-256-GCM"
        for op in ("seal", "open"):
            o, r = mb.get((alg, op, "ours-vaes256")), mb.get((alg, op, "ring"))
            if o is None or r is None:
                continue
            n += 1
            m = o / r
            cells = []
            for c in cols:
                pr = pred_ratio[(c, op, nr)]
                agree[c] += winner(pr) is not None and winner(pr) == winner(m)
                cells.append(f"{pr:.2f}")
            cyc = (lambda v: f"{256 / (v * 1e6) * ghz * 1e9:.0f}") if ghz else (lambda v: "-")
            p(f"| {key(nr)} | {op} | {o:.0f} | {r:.0f} | {m:.2f} | " + " | ".join(cells) + f" | {cyc(o)} | {cyc(r)} |")
    p()
    if n:
        p("Predictions that pick the same winner as the measurement (a ratio within 1% of 1 picks none): "
          + ", ".join(f"{c} {agree[c]} of {n}" for c in cols) + ".")
        p()


if __name__ == "__main__":
    main()
