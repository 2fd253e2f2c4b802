import numpy as np, time
from bnn import *
B=8
t0=time.time()
th0=np.zeros((B,NP))
for s in range(B):
    th0[s]=init_params(np.random.default_rng(1000+s),1)[0]
th=adam(th0.copy(),2000,1e-3)
ta=time.time()-t0
print("adam time",ta,"loss",loss(th).round(3),"U",U(th).round(3))
lam=np.zeros((B,NP)); vec=np.zeros((B,NP,NP)); th_=[]
t1=time.time()
for s in range(B):
    Hs=hessian_fd(th[s]); w,V=np.linalg.eigh(Hs); lam[s]=w[::-1]; vec[s]=V[:,::-1]
th_time=(time.time()-t1)/B
print("hessian+eig time per start",th_time)
for s in range(B):
    w=lam[s]
    print(s,"lmax %.1f l2 %.1f l20 %.2f l21 %.2f l60 %.3f l61 %.3f lmin %.4f  #>T %d  #>20T %d  #<0 %d"%(w[0],w[1],w[19],w[20],w[59],w[60],w[-1],(w>T).sum(),(w>20*T).sum(),(w<0).sum()))
print("quantiles of eig (start 0):",np.quantile(lam[0],[0,.01,.05,.1,.25,.5,.75,.9,.95,.99,1]).round(4))
np.savez("setup.npz",th=th,lam=lam,vec=vec,adam_time=ta,hess_time=th_time)
