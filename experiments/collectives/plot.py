"""Draws results/crossover.png from results/crossover.csv and prints the table."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"


def main() -> None:
    df = pd.read_csv(OUT / "crossover.csv")
    hosts = sorted(df["hosts"].unique())
    fig, axes = plt.subplots(1, len(hosts), figsize=(4 * len(hosts), 3.4), sharey=True)
    for ax, n in zip(axes, hosts):
        for alg, g in df[df["hosts"] == n].groupby("algorithm"):
            ax.plot(g["size_bytes"], g["busbw_gbps"], marker=".", label=alg)
        ax.set_xscale("log")
        ax.set_title(f"{n} hosts")
        ax.set_xlabel("all-reduce size (bytes)")
    axes[0].set_ylabel("bus bandwidth (Gb/s)")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(OUT / "crossover.png", dpi=120)
    table = df.pivot_table(index=["hosts", "size_bytes"], columns="algorithm", values="busbw_gbps")
    print(table.round(1).to_string())


if __name__ == "__main__":
    main()
