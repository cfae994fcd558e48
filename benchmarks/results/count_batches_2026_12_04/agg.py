import sys, collections, re
def load(path):
    stacks = collections.Counter()
    for line in open(path):
        line=line.rstrip()
        if not line: continue
        stack, n = line.rsplit(" ",1)
        stacks[stack]+=int(n)
    return stacks
def frames(stack):
    return stack.split(";")
files = {"mp":("spy_local_mp.txt",64350),"ray":("spy_ray.txt",49700)}
data = {k:load(v[0]) for k,v in files.items()}
for k,s in data.items():
    total=sum(s.values()); print(k,"samples",total, "per 1k steps", round(total/files[k][1]*1000,1))
# thread split: py-spy raw first frame is "process/thread"?
def key_thread(stack): return frames(stack)[0]
for k,s in data.items():
    c=collections.Counter()
    for st,n in s.items(): c[key_thread(st)]+=n
    print(k, c.most_common(8))
# inclusive by function names containing patterns
pats = sys.argv[1:] or ["select_actions","observe ","observe_first","update (","step (","_call_environment","call_environment","increment","get_variables","_settle","append","create_item","flush","reset","_play_episode"]
for p in pats:
    row=[]
    for k,s in data.items():
        n=sum(v for st,v in s.items() if p in st)
        row.append(f"{k}: {n/files[k][1]*1000:6.1f}")
    print(f"{p:30s}", *row)
