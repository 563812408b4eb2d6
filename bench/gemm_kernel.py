# bench/gemm_kernel.py M N K FORM REPS - the MLIR of bench/gemm_gflops.sh: one
# f32 GEMM (FORM nn, nt or tn) as the matmul lowering writes it (a
# linalg.generic on buffers, mul-add with reassoc) and a main that times
# REPS calls after a warm-up call and prints GFLOP/s.
import sys
M,N,K,form,reps=int(sys.argv[1]),int(sys.argv[2]),int(sys.argv[3]),sys.argv[4],int(sys.argv[5])
a=(f"{K}x{M}" if form=="tn" else f"{M}x{K}")
b=(f"{N}x{K}" if form=="nt" else f"{K}x{N}")
amap="(k, m)" if form=="tn" else "(m, k)"
bmap="(n, k)" if form=="nt" else "(k, n)"
print(f"""
func.func private @rtclock() -> f64
func.func private @printF64(f64)
func.func private @printNewline()
func.func @kernel(%a: memref<{a}xf32>, %b: memref<{b}xf32>, %c: memref<{M}x{N}xf32>) attributes {{passthrough = ["noinline"]}} {{
  linalg.generic {{indexing_maps = [affine_map<(m, n, k) -> {amap}>, affine_map<(m, n, k) -> {bmap}>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]}}
      ins(%a, %b : memref<{a}xf32>, memref<{b}xf32>) outs(%c : memref<{M}x{N}xf32>) {{
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y fastmath<reassoc,contract> : f32
    %s = arith.addf %acc, %p fastmath<reassoc,contract> : f32
    linalg.yield %s : f32
  }}
  return
}}
func.func @main() {{
  %a = memref.alloc() : memref<{a}xf32>
  %b = memref.alloc() : memref<{b}xf32>
  %c = memref.alloc() : memref<{M}x{N}xf32>
  %one = arith.constant 0.5 : f32
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%one : f32) outs(%a : memref<{a}xf32>)
  linalg.fill ins(%one : f32) outs(%b : memref<{b}xf32>)
  linalg.fill ins(%z : f32) outs(%c : memref<{M}x{N}xf32>)
  func.call @kernel(%a, %b, %c) : (memref<{a}xf32>, memref<{b}xf32>, memref<{M}x{N}xf32>) -> ()
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = arith.constant {reps} : index
  %t0 = func.call @rtclock() : () -> f64
  scf.for %i = %c0 to %r step %c1 {{
    func.call @kernel(%a, %b, %c) : (memref<{a}xf32>, memref<{b}xf32>, memref<{M}x{N}xf32>) -> ()
  }}
  %t1 = func.call @rtclock() : () -> f64
  %dt = arith.subf %t1, %t0 : f64
  %flops = arith.constant {2.0*M*N*K*reps/1e9} : f64
  %g = arith.divf %flops, %dt : f64
  func.call @printF64(%g) : (f64) -> ()
  func.call @printNewline() : () -> ()
  return
}}""")
