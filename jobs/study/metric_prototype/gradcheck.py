import numpy as np, time
from bnn import *
rng=np.random.default_rng(1)
th=init_params(rng,3); th+=0.1*rng.standard_normal(th.shape)
g,_=grad(th)
eps=1e-6; maxrel=0
for i in rng.choice(NP,40,replace=False):
    e=np.zeros(NP); e[i]=eps
    fd=(U(th+e)-U(th-e))/(2*eps)
    maxrel=max(maxrel, np.max(np.abs(fd-g[:,i])/(np.abs(g[:,i])+1e-6)))
d=rng.standard_normal(NP)
fd=(U(th+eps*d)-U(th-eps*d))/(2*eps)
print("coord max rel err",maxrel," dir err", np.abs(fd-g@d)/np.abs(g@d))
for B in (1,8,962):
    x=np.tile(th[:1],(B,1)); t0=time.time(); n=max(1,2000//B)
    for _ in range(n): grad(x)
    print("B",B,"sec/grad-call",(time.time()-t0)/n)
