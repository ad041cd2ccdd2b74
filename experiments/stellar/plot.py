"""Draws the STELLAR figures from the CSVs ``run.py`` wrote into ``results/`` and
prints their tables (Markdown) for the README.

    python experiments/stellar/plot.py
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

RES = Path(__file__).resolve().parent / "results"
COLORS = {1: "black", 4: "tab:red", 16: "tab:orange", 128: "tab:blue"}


def band(ax, df, x, y, label, color, style="-"):
    """Mean over seeds with a min-max band."""
    g = df.groupby(x)[y].agg(["mean", "min", "max"])
    ax.plot(g.index, g["mean"], style, marker="o", ms=3, color=color, label=label)
    ax.fill_between(g.index, g["min"], g["max"], color=color, alpha=0.15)


def fig12(df: pd.DataFrame) -> None:
    fig, ax = plt.subplots(figsize=(6, 4))
    for (k, algo), color in (((8, "obs"), "tab:blue"), ((8, "rr"), "tab:green"), ((16, "obs"), "tab:purple")):
        d = df[(df["k"] == k) & (df["algo"].isin([algo, "single"]))]
        band(ax, d, "paths", "imbalance", f"k={k} ({k // 2} uplinks/ToR), {algo.upper()}", color)
        if algo == "obs":
            g = d.groupby("paths")["hash_model"].mean()
            ax.plot(g.index, g.values, ":", color=color, label=f"k={k}: pure hashing model")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("paths per connection")
    ax.set_ylabel("ToR uplink imbalance (max-min)/sum")
    ax.set_title("Fig. 12: uplink imbalance vs paths (2 MB permutation)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(RES / "fig12_imbalance.png", dpi=110)


def fig11(drop: pd.DataFrame, ar: pd.DataFrame) -> None:
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    for ax, choice in zip(axes[:2], ("solo", "busiest")):
        d = drop[drop["link_choice"] == choice]
        if choice == "busiest":
            # Seeds where the busiest cable is the solo one are stored once, as solo.
            d = pd.concat([d, drop[(drop["link_choice"] == "solo") & ~drop["seed"].isin(d["seed"].unique())]])
        for paths, color in COLORS.items():
            band(ax, d[d["paths"] == paths], "loss", "worst_slowdown", f"{paths} path{'s' if paths > 1 else ''}", color)
        ax.set_xlabel("loss rate on one leaf-spine cable")
        ax.set_ylabel("worst flow FCT / FCT without loss")
        ax.set_title(f"permutation 32 MB, {choice} uplink lossy", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    ax = axes[2]
    for (size, style) in (("32MB", "--"), ("128MB", "-")):
        for paths in (1, 4, 128):
            band(ax, ar[(ar["size"] == size) & (ar["paths"] == paths)], "loss", "duration_ratio",
                 f"{size}, {paths} path{'s' if paths > 1 else ''}", COLORS[paths], style)
    ax.set_xlabel("loss rate on one leaf-spine cable")
    ax.set_ylabel("all-reduce time / time without loss")
    ax.set_title("ring all-reduce, 16 hosts", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.suptitle("Fig. 11: random drop on one link (4 leaves x 16 spines x 4 hosts)")
    fig.tight_layout()
    fig.savefig(RES / "fig11_drop.png", dpi=110)


def fig9(df: pd.DataFrame) -> None:
    d = df[df["size"] == "8MB"]
    order = ["single", "obs", "rr", "dwrr", "best_rtt", "mprdma"]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, (col, label, scale) in zip(axes, (("up_queue_mean_bytes", "mean ToR uplink queue (KB)", 1e3),
                                              ("up_queue_max_bytes", "max ToR uplink queue (KB)", 1e3),
                                              ("fct_max_us", "slowest flow FCT (us)", 1))):
        for i, paths in enumerate((4, 128)):
            g = d[(d["paths"] == paths) | ((d["algo"] == "single") & (paths == 4))].groupby("algo")[col].mean() / scale
            g = g.reindex(order)
            ax.bar([j + (i - 0.5) * 0.4 for j in range(len(order))], g.values, width=0.4,
                   label=f"{paths} paths", color=("tab:red", "tab:blue")[i])
        ax.set_xticks(range(len(order)))
        ax.set_xticklabels(order, fontsize=8)
        ax.set_ylabel(label)
        ax.grid(alpha=0.3, axis="y")
    axes[0].legend(fontsize=8)
    fig.suptitle("Fig. 9: path-selection algorithms, k=8 fat-tree permutation of 8 MB (mean of 3 seeds; single = 1 path)")
    fig.tight_layout()
    fig.savefig(RES / "fig9_algos.png", dpi=110)


def md(df: pd.DataFrame) -> str:
    """A DataFrame as a Markdown table (index columns first)."""
    df = df.reset_index()
    head = [" / ".join(map(str, c)) if isinstance(c, tuple) else str(c) for c in df.columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)


def tables(imb, drop, ar, algos) -> None:
    print("## imbalance (mean over seeds)")
    t = imb.groupby(["k", "algo", "paths"])[["imbalance", "hash_model", "fct_max_us"]].mean().round(3)
    print(md(t.unstack(["k", "algo"])["imbalance"]))
    print(md(t.unstack(["k", "algo"])["hash_model"]))
    print("## drop: worst slowdown, mean [min-max] over seeds")
    for choice in ("solo", "busiest"):
        d = drop[drop["link_choice"] == choice]
        g = d.groupby(["paths", "loss"])["worst_slowdown"].agg(["mean", "min", "max"])
        cell = g.apply(lambda r: f"{r['mean']:.2f} [{r['min']:.2f}-{r['max']:.2f}]", axis=1).unstack("loss")
        print(f"### {choice} ({d['seed'].nunique()} seeds)")
        print(md(cell))
    print("## all-reduce: duration ratio, mean over seeds (no-loss duration in us)")
    g = ar.groupby(["size", "paths", "loss"])["duration_ratio"].mean().round(3).unstack("loss")
    g["base_us"] = ar[ar["loss"] == 0].groupby(["size", "paths"])["duration_us"].mean().round(0)
    print(md(g))
    print("## algos (mean over seeds)")
    cols = ["fct_max_us", "fct_mean_us", "up_queue_mean_bytes", "up_queue_max_bytes", "down_queue_mean_bytes",
            "down_queue_max_bytes", "imbalance", "paths_used", "ecn_marks"]
    print(md(algos.groupby(["size", "paths", "algo"])[cols].mean().round(1)))


def jobs_tables() -> None:
    """Fig. 10, 16 and 6 (from background.csv, placement.csv, startup.csv), when run."""
    if (RES / "background.csv").exists():
        bg = pd.read_csv(RES / "background.csv")
        print("## background: foreground busbw (Gb/s), mean [min-max] over seeds")
        g = bg.groupby(["background", "algo", "paths"])["busbw_gbps"].agg(["mean", "min", "max"])
        print(md(g.apply(lambda r: f"{r['mean']:.1f} [{r['min']:.1f}-{r['max']:.1f}]", axis=1).unstack("paths")))
    if (RES / "placement.csv").exists():
        pl = pd.read_csv(RES / "placement.csv")
        print("## placement: step time (us), mean over seeds")
        t = pl.groupby(["placement", "transport"])["step_us"].mean().unstack("transport").round(0)
        t["stellar_gain"] = (t["roce"] / t["stellar"]).round(3)
        print(md(t))
    if (RES / "startup.csv").exists():
        st = pd.read_csv(RES / "startup.csv")
        print("## startup (s)")
        t = st.pivot(index="memory", columns="pinning", values="startup_s").round(1)
        t["ratio"] = (t["pin_all"] / t["pvdma"]).round(1)
        print(md(t))


def main() -> None:
    jobs_tables()
    if not (RES / "imbalance.csv").exists():
        return
    imb = pd.read_csv(RES / "imbalance.csv")
    drop = pd.read_csv(RES / "drop.csv")
    ar = pd.read_csv(RES / "allreduce.csv")
    algos = pd.read_csv(RES / "algos.csv")
    fig12(imb)
    fig11(drop, ar)
    fig9(algos)
    tables(imb, drop, ar, algos)


if __name__ == "__main__":
    main()
