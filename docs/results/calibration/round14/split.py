"""Counts of a same_hour.py table within 15 %, split by level and variant (from its rounded means)."""
import re, sys
for f in sys.argv[1:]:
    rows=[l for l in open(f) if re.match(r"^\| (default|fifo|sjf|independent) \|",l)]
    per={}
    for l in rows:
        c=[x.strip() for x in l.strip().strip('|').split('|')]
        v,rate=c[0],int(c[1])
        ok=[]
        for cell in (c[2],c[4],c[6]):
            meas=float(cell.split()[0]); sim=float(cell.split('/')[-1])
            ok.append(abs(sim-meas)<=0.15*meas)
        per.setdefault(v,{})[rate]=ok
    lo=sum(sum(per[v][r]) for v in per for r in per[v] if r<=600)
    hi=sum(sum(per[v][800]) for v in per)
    d=sum(sum(per['default'][r]) for r in per['default'])
    total=re.search(r"\*\*(\d+) of (\d+)", open(f).read()).group(1)
    print(f"| {f} | {lo} | {hi} | {lo+hi} ({total}) | {d} |")
