#!/usr/bin/env python3
"""Refits the built-in accelerator and fabric profiles from their component measurements.

Runs `placesim calibrate topology/profiles/measurements/<name>.json` for each accelerator, rounds the fitted compute
and fabric figures to four significant digits (the precision of the built-in constants), applies the transfers the
measurements cannot supply (below) and writes topology/profiles/<name>.json, which the built-in accelerators
(topology/hardware/accelerators/*.json, "profile") read as they are. It prints each reference fabric's fit, for the
fabric files topology/hardware/fabrics/*.json.

Usage: scripts/refit_profiles.py [build/placesim]
"""
import json
import math
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROFILES = os.path.join(ROOT, "topology", "profiles")

# Fitted in this order: a later accelerator takes figures its own measurements lack from an earlier one. Only the
# A100 has published per-layer times (Korthikanti et al. Table 4); the others take from its layer fit the ratio of
# the layers' memory efficiency to STREAM's and the overlap penalty. gb200's measurements hold B200's GEMM shape
# fit ("fixed", read from topology/profiles/b200.json), so b200 is fitted first.
ORDER = ["a100-80gb", "h100-sxm", "h200", "b200", "gb200", "mi300x"]
LAYER_FIT = "a100-80gb"
# Then the interference factors: intra-node compute_slowdown, comm_slowdown, inter-node compute_slowdown,
# comm_slowdown (1.0 where not measured).
COMPUTE_ORDER = ["gemm_peak_efficiency", "gemm_latency_s", "gemm_k_overhead", "gemm_tile", "gemm_roofline_p",
                 "memory_efficiency", "kernel_latency_s", "flash_attention_efficiency", "overlap_penalty"]


def round4(x):
    return float(f"{x:.4g}") if isinstance(x, float) and x != 0 and math.isfinite(x) else x


def calibrate(placesim, name):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([placesim, "calibrate", os.path.join(PROFILES, "measurements", name + ".json"), "--out",
                        out.name], check=True, stdout=subprocess.DEVNULL)
        return json.load(open(out.name))


def stream_efficiency(placesim, name):
    """memory_efficiency fitted to the STREAM points of a measurement file alone."""
    measured = json.load(open(os.path.join(PROFILES, "measurements", name + ".json")))
    with tempfile.NamedTemporaryFile("w", suffix=".json") as only:
        json.dump({"accelerator": measured["accelerator"], "memory": measured["memory"]}, only)
        only.flush()
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            subprocess.run([placesim, "calibrate", only.name, "--out", out.name], check=True,
                           stdout=subprocess.DEVNULL)
            return json.load(open(out.name))["compute"]["memory_efficiency"]


def add_source(p, label, text):
    """Appends a citation to a profile's sources, a list or an object {label: citation}."""
    if isinstance(p["sources"], dict):
        p["sources"][label] = text
    else:
        p["sources"].append(text)


def transfer(p, name, layer_fit, ratio, fitted):
    """Sets the figures `name` has no measurement of from the layer fit."""
    c = p["compute"]
    c["memory_efficiency"] = round4(c["memory_efficiency"] * ratio)
    c["overlap_penalty"] = layer_fit["compute"]["overlap_penalty"]
    add_source(p, "layer-fit transfer", f"memory_efficiency and overlap_penalty transferred from the {LAYER_FIT} layer fit "
                        f"(Korthikanti Table 4): layer kernels reach {ratio:.3f} of the STREAM efficiency, and an "
                        f"overlapped collective costs {c['overlap_penalty']:.3f} of its time; no published per-layer "
                        f"times were found for this accelerator")


def write(name, profile):
    with open(os.path.join(PROFILES, name + ".json"), "w") as f:
        json.dump(profile, f, indent=1)
        f.write("\n")


def main(argv):
    placesim = argv[0] if argv else os.path.join(ROOT, "build", "placesim")
    fitted = {}
    ratio = None
    for name in ORDER:
        p = calibrate(placesim, name)
        p["compute"] = {k: round4(v) for k, v in p["compute"].items()}
        for scale in p["compute"].get("power_scales", []):
            scale["compute_scale"] = round4(scale["compute_scale"])
        interference = p["compute"].get("interference", {})
        for scope, factors in interference.items():
            if isinstance(factors, dict):
                interference[scope] = {k: round4(v) for k, v in factors.items()}
        for scope, fabric in p.get("comm", {}).items():
            p["comm"][scope] = {k: round4(v) for k, v in fabric.items()}
        if not any(isinstance(f, dict) for f in p["compute"].get("interference", {}).values()):
            add_source(p, "interference", f"No public measurement of GEMM/NCCL interference on {name} was found: overlap "
                                f"interference is off on both fabrics (overlapped communication costs nothing)")
        if name == LAYER_FIT:
            ratio = p["compute"]["memory_efficiency"] / stream_efficiency(placesim, name)
        else:
            transfer(p, name, fitted[LAYER_FIT], ratio, fitted)
        fitted[name] = p
        write(name, p)
    a100 = json.loads(json.dumps(fitted["a100-80gb"]))
    a100["accelerator"] = "a100-40gb"
    add_source(a100, "same die", "Same GA100 die and clocks as a100-80gb: the 80GB fit applies (HBM bandwidth enters "
                           "through the preset's hbm_bw, 1555 GB/s)")
    write("a100-40gb", a100)
    fitted["a100-40gb"] = a100

    # Variants without measurements of their own take a measured die's profile; the NVLink-cut ones carry their
    # cut in the fabric too (200 GB/s per direction), so that the file used as an accelerator's `profile` keeps it.
    nvlink_cut = {"a800": ("nvlink3-a800", 200e9), "h800": ("nvlink4-h800", 200e9)}
    for variant, base, why in [
            ("a800", "a100-80gb", "A800 SXM4 80GB is the A100 SXM4 80GB die and memory with NVLink cut to 400 GB/s "
                                  "bidirectional (NVIDIA's statement to Reuters, 2022-11-08): the a100-80gb fit applies "
                                  "(NVLink enters through the cluster)"),
            ("h800", "h100-sxm", "H800 SXM5 is the H100 SXM5 die and memory with NVLink cut to 400 GB/s "
                                 "bidirectional: the h100-sxm fit applies (NVLink enters through the cluster)")]:
        copy = json.loads(json.dumps(fitted[base]))
        copy["accelerator"] = variant
        add_source(copy, "same die", why)
        if variant in nvlink_cut and "intra_node" in copy.get("comm", {}):
            copy["comm"]["intra_node"]["name"], copy["comm"]["intra_node"]["link_bw"] = nvlink_cut[variant]
        write(variant, copy)

    print("topology/hardware/fabrics/*.json (fabric of each accelerator's reference system):")
    for name in ORDER:
        fabric = fitted[name].get("comm", {}).get("intra_node", {})
        shown = {k: v for k, v in fabric.items() if k not in ("sources", "name", "link_bw")}
        print(f"  {name} {fabric.get('name')}: {shown}")


if __name__ == "__main__":
    main(sys.argv[1:])
