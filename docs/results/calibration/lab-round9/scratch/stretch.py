# The time-average number of runtime calls running during each line_rnn_zh batch-of-one call
# (its measured part, from its dispatch), and the call's median duration by that number, per
# policy and rate, from the ninth round's timelines (/tmp/cal10/grid). Run: python stretch.py
import json, glob, collections, statistics, bisect
def calls(trace):
    out=[]
    for e in trace['traceEvents']:
        if e.get('ph')=='X' and not e['args'].get('failed'):
            out.append((e['ts']/1e3, (e['ts']+e['dur'])/1e3, e['args']['measured_ms'], e['args']['model'], e['args']['batch_size'], e['tid']))
    return out
def conc(cs):
    # time-average number of calls running (measured part ~ [start, start+measured]) during each call
    ev=sorted([(s,1) for s,_,m,*_ in cs]+[(s+m,-1) for s,_,m,*_ in cs])
    # prefix: step function
    ts=[];vals=[];n=0
    for t,d in ev:
        n+=d; ts.append(t); vals.append(n)
    res=[]
    for s,e,m,model,bs,dev in cs:
        a,b=s,s+m
        i=bisect.bisect_right(ts,a)-1; acc=0.0; t=a
        cur=vals[i] if i>=0 else 0
        j=i+1
        while j<len(ts) and ts[j]<b:
            acc+=cur*(ts[j]-t); t=ts[j]; cur=vals[j]; j+=1
        acc+=cur*(b-t)
        res.append(acc/m if m>0 else cur)
    return res
for v in ('fifo','independent'):
  for rate in (200,400,600):
    bins=collections.defaultdict(list)
    for p in glob.glob(f'/tmp/cal10/grid/runs/{v}/L*-r*.trace.json'):
        r=json.load(open(p.replace('.trace.json','.json')))
        if r['offered']['rate_rps']!=rate: continue
        cs=calls(json.load(open(p)))
        for c,(s,e,m,model,bs,dev) in zip(conc(cs),cs):
            if model=='line_rnn_zh' and bs==1:
                bins[min(4,round(c*2)/2)].append(m)
    print(v, rate, {k:(len(x), round(statistics.median(x),2)) for k,x in sorted(bins.items()) if len(x)>=20})
