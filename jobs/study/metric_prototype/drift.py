"""Offline: does a start-point metric still deflate later? Uses unit_A window samples (unbiased-ish dynamics)."""
import numpy as np
from bnn import *
S=np.load("setup.npz"); lam,vec=S["lam"],S["vec"]
d=np.load("res_unit_A.npz"); W=d["win_theta"]  # 150,B,NP ; sample i = step 7000+20(i+1)
def Pdefl(b,k):
    D=np.sqrt(lam[b,k]/lam[b,:k])-1; Uk=vec[b][:,:k]; return np.eye(NP)+Uk@np.diag(D)@Uk.T
def Pdense(b):
    return vec[b]@np.diag(np.maximum(lam[b],T)**-0.5)@vec[b].T
print("A) metric built at Adam start, evaluated at unit_A final point (step 10000):")
print(" traj | lmax(H_end) | lmax(P20 H P20) | lmax(P60 H P60) | lmax(Pd H Pd) | top20 overlap(start,end)")
for b in range(8):
    He=hessian_fd(W[-1,b]); w,V=np.linalg.eigh(He)
    r=[np.linalg.eigvalsh(P@He@P)[-1] for P in (Pdefl(b,20),Pdefl(b,60),Pdense(b))]
    ov=((vec[b][:,:20].T@V[:,::-1][:,:20])**2).sum()/20
    print(f" {b} | {w[-1]:.0f} | {r[0]:.1f} (start {lam[b,20]:.2f}) | {r[1]:.1f} (start {lam[b,60]:.2f}) | {r[2]:.0f} (start 1) | {ov:.2f}")
print("B) drift along unit_A trajectory 0 within the window: metric from H at window sample 0 (step 7020)")
b=0; H0=hessian_fd(W[0,b]); w0,V0=np.linalg.eigh(H0); w0,V0=w0[::-1],V0[:,::-1]
D=np.sqrt(w0[20]/w0[:20])-1; P=np.eye(NP)+V0[:,:20]@np.diag(D)@V0[:,:20].T
print(" lag_steps | top20 overlap | lmax(H) | lmax(P20 H P20) [at lag 0 = %.2f]"%w0[20])
for i in (1,2,5,10,25,50,149):
    H=hessian_fd(W[i,b]); w,V=np.linalg.eigh(H)
    ov=((V0[:,:20].T@V[:,::-1][:,:20])**2).sum()/20
    print(f" {20*i} | {ov:.2f} | {w[-1]:.0f} | {np.linalg.eigvalsh(P@H@P)[-1]:.1f}")
