"""Per level: each model's p99 x independent's, the worst, mean and goodput x independent's (means over repeats, from summary.json)."""
import json, sys
s = json.load(open(sys.argv[1]))
V = s["variants"]
def model_p99(v, i):
    lv = V[v]["levels"][i]
    return {m: d["p99_ms"] for m, d in lv["models"].items()}, lv["latency_ms"]["p50"], lv["goodput_rps"], lv["offered_rps"]
print("| variant | offered/s | char_cnn p99 ms (× indep.) | line_rnn_zh p99 ms (× indep.) | line_rnn_en p99 ms (× indep.) | worst × indep. | overall p50 ms (× indep.) | goodput/s (× indep.) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for v in V:
    for i in range(len(V[v]["levels"])):
        ind, imean, igood, off = model_p99("independent", i)
        p, mean, good, _ = model_p99(v, i)
        r = {m: p[m] / ind[m] for m in p}
        cells = " | ".join(f"{p[m]:.0f} ({r[m]:.2f})" for m in ("char_cnn", "line_rnn_zh", "line_rnn_en"))
        name = f"`{v}`" if i == 0 else ""
        print(f"| {name} | {off:.0f} | {cells} | **{max(r.values()):.2f}** | {mean:.1f} ({mean/imean:.2f}) | {good:.0f} ({good/igood:.2f}) |")
