// RUN: dist-opt %s --split-input-file --dist-fuse-rows --canonicalize \
// RUN:   --mlir-print-local-scope | FileCheck %s
// RUN: dist-opt %s --split-input-file --dist-fuse-rows --canonicalize \
// RUN:   --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries \
// RUN:   function-boundary-type-conversion=identity-layout-map" --cse --canonicalize \
// RUN:   | FileCheck %s --check-prefix=BUF

// A layer normalisation after a residual add (the mean's pass, written out
// as ONNX's ReduceMean would be, and the normalising pass): one loop over
// blocks of rows (16 KiB / 3 KiB per row = 5 rows) computes the residual
// sum, its row sums, the means and the normalised rows. The residual sum,
// which the next residual add also reads, is computed once in the loop,
// and the loop yields it whole for that add.

// CHECK-LABEL: func.func @layer_norm_after_residual(
// CHECK: %[[L:.*]]:2 = scf.forall (%{{.*}}) = (0) to (197) step (5)
// CHECK: arith.addf
// CHECK-NOT: arith.addf %{{.*}}, %{{.*}} : f32{{$}}
// CHECK: iterator_types = ["parallel", "reduction"]
// CHECK: arith.divf
// CHECK: arith.subf
// CHECK: scf.forall.in_parallel
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[L]]#1, %[[L]]#0
// CHECK-NOT: linalg.generic
// CHECK: return

// BUF-LABEL: func.func @layer_norm_after_residual(
// BUF-NOT: memref.copy
// BUF: return
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#v = affine_map<(d0) -> (d0)>
func.func @layer_norm_after_residual(%a: tensor<197x768xf32>, %b: tensor<197x768xf32>, %g: tensor<768xf32>) -> tensor<197x768xf32> {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 768.0 : f32
  %e0 = tensor.empty() : tensor<197x768xf32>
  %x = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<197x768xf32>, tensor<197x768xf32>) outs(%e0 : tensor<197x768xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<197x768xf32>
  %e1 = tensor.empty() : tensor<197xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<197xf32>) -> tensor<197xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<197x768xf32>) outs(%f1 : tensor<197xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<197xf32>
  %mean = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%sum : tensor<197xf32>) outs(%e1 : tensor<197xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = arith.divf %p, %n : f32
    linalg.yield %s : f32
  } -> tensor<197xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %mean, %g : tensor<197x768xf32>, tensor<197xf32>, tensor<768xf32>) outs(%e0 : tensor<197x768xf32>) {
  ^bb0(%p: f32, %m: f32, %gg: f32, %o: f32):
    %d = arith.subf %p, %m : f32
    %r = arith.mulf %d, %gg : f32
    linalg.yield %r : f32
  } -> tensor<197x768xf32>
  %z = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<197x768xf32>, tensor<197x768xf32>) outs(%e0 : tensor<197x768xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<197x768xf32>
  return %z : tensor<197x768xf32>
}

// -----

// A softmax as dist-lower-to-linalg writes it (the maximum; the
// exponentials and their sum in one pass; the exponentials divided by the
// sum in place) over [12, 197, 197]: blocks of 1 x 20 rows, the
// exponentials computed once (the division reads them instead of dividing
// its init in place, which would compute them a second time).

// CHECK-LABEL: func.func @softmax(
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (12, 197) step (1, 20)
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK-NOT: math.exp
// CHECK: arith.divf
// CHECK: scf.forall.in_parallel
// CHECK-NOT: linalg.generic
// CHECK: return

// BUF-LABEL: func.func @softmax(
// BUF-NOT: memref.copy
// BUF: return
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#kept = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @softmax(%x: tensor<12x197x197xf32>) -> tensor<12x197x197xf32> {
  %lowest = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<12x197xf32>
  %fm = linalg.fill ins(%lowest : f32) outs(%e : tensor<12x197xf32>) -> tensor<12x197xf32>
  %m = linalg.generic {indexing_maps = [#id3, #kept], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<12x197x197xf32>) outs(%fm : tensor<12x197xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<12x197xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e : tensor<12x197xf32>) -> tensor<12x197xf32>
  %ee = tensor.empty() : tensor<12x197x197xf32>
  %es:2 = linalg.generic {indexing_maps = [#id3, #kept, #id3, #kept], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %m : tensor<12x197x197xf32>, tensor<12x197xf32>) outs(%ee, %fs : tensor<12x197x197xf32>, tensor<12x197xf32>) {
  ^bb0(%in: f32, %mx: f32, %o: f32, %acc: f32):
    %d = arith.subf %in, %mx : f32
    %ex = math.exp %d : f32
    %s = arith.addf %acc, %ex : f32
    linalg.yield %ex, %s : f32, f32
  } -> (tensor<12x197x197xf32>, tensor<12x197xf32>)
  %y = linalg.generic {indexing_maps = [#kept, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%es#1 : tensor<12x197xf32>) outs(%es#0 : tensor<12x197x197xf32>) {
  ^bb0(%s: f32, %o: f32):
    %r = arith.divf %o, %s : f32
    linalg.yield %r : f32
  } -> tensor<12x197x197xf32>
  return %y : tensor<12x197x197xf32>
}

// -----

// A row statistic that an op before the normalising pass also reads stays
// a whole-tensor reduction (the loop stands where the normalising pass
// was, after that reader); the normalising pass is still tiled, and reads
// blocks of it.

// CHECK-LABEL: func.func @statistic_read_before(
// CHECK: %[[S:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: %[[R:.*]] = linalg.generic {{.*}}ins(%[[S]]
// CHECK: scf.forall
// CHECK: tensor.extract_slice %[[S]]
// CHECK: return %[[R]]
#id_b = affine_map<(d0, d1) -> (d0, d1)>
#row_b = affine_map<(d0, d1) -> (d0)>
#v_b = affine_map<(d0) -> (d0)>
func.func @statistic_read_before(%x: tensor<64x256xf32>) -> (tensor<64xf32>, tensor<64x256xf32>) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<64xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64xf32>) -> tensor<64xf32>
  %sum = linalg.generic {indexing_maps = [#id_b, #row_b], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<64x256xf32>) outs(%f1 : tensor<64xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %e2 = tensor.empty() : tensor<64xf32>
  %twice = linalg.generic {indexing_maps = [#v_b, #v_b], iterator_types = ["parallel"]} ins(%sum : tensor<64xf32>) outs(%e2 : tensor<64xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = arith.addf %p, %p : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %e0 = tensor.empty() : tensor<64x256xf32>
  %y = linalg.generic {indexing_maps = [#id_b, #row_b, #id_b], iterator_types = ["parallel", "parallel"]} ins(%x, %sum : tensor<64x256xf32>, tensor<64xf32>) outs(%e0 : tensor<64x256xf32>) {
  ^bb0(%p: f32, %s: f32, %o: f32):
    %r = arith.divf %p, %s : f32
    linalg.yield %r : f32
  } -> tensor<64x256xf32>
  return %twice, %y : tensor<64xf32>, tensor<64x256xf32>
}

// -----

// A product (the runtime's GEMM runs it on whole matrices) is never
// computed per block; a consumer that reads no row statistic is not tiled.

// CHECK-LABEL: func.func @product_then_norm(
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: scf.forall
// CHECK-NOT: arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK: scf.forall.in_parallel
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id_c = affine_map<(d0, d1) -> (d0, d1)>
#row_c = affine_map<(d0, d1) -> (d0)>
func.func @product_then_norm(%a: tensor<64x128xf32>, %w: tensor<128x256xf32>) -> tensor<64x256xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<64x256xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<64x256xf32>) -> tensor<64x256xf32>
  %p = linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %w : tensor<64x128xf32>, tensor<128x256xf32>) outs(%f0 : tensor<64x256xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<64x256xf32>
  %e1 = tensor.empty() : tensor<64xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64xf32>) -> tensor<64xf32>
  %sum = linalg.generic {indexing_maps = [#id_c, #row_c], iterator_types = ["parallel", "reduction"]} ins(%p : tensor<64x256xf32>) outs(%f1 : tensor<64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %o, %x : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %e2 = tensor.empty() : tensor<64x256xf32>
  %y = linalg.generic {indexing_maps = [#id_c, #row_c, #id_c], iterator_types = ["parallel", "parallel"]} ins(%p, %sum : tensor<64x256xf32>, tensor<64xf32>) outs(%e2 : tensor<64x256xf32>) {
  ^bb0(%x: f32, %s: f32, %o: f32):
    %r = arith.divf %x, %s : f32
    linalg.yield %r : f32
  } -> tensor<64x256xf32>
  return %y : tensor<64x256xf32>
}

// -----

// Two normalisations in a row (the second one's statistics read the first
// one's output): the first one's normalising pass joins the second one's
// kernel with everything it reads, so both run in one loop.

// CHECK-LABEL: func.func @normalised_twice(
// CHECK: scf.forall
// CHECK: iterator_types = ["parallel", "reduction"]
// CHECK: iterator_types = ["parallel", "parallel"]
// CHECK: iterator_types = ["parallel", "reduction"]
// CHECK: iterator_types = ["parallel", "parallel"]
// CHECK-NOT: linalg.generic
// CHECK: scf.forall.in_parallel
// CHECK-NOT: linalg.generic
// CHECK: return
#id_d = affine_map<(d0, d1) -> (d0, d1)>
#row_d = affine_map<(d0, d1) -> (d0)>
func.func @normalised_twice(%x: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<64xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64xf32>) -> tensor<64xf32>
  %s1 = linalg.generic {indexing_maps = [#id_d, #row_d], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<64x256xf32>) outs(%f1 : tensor<64xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %e0 = tensor.empty() : tensor<64x256xf32>
  %y1 = linalg.generic {indexing_maps = [#id_d, #row_d, #id_d], iterator_types = ["parallel", "parallel"]} ins(%x, %s1 : tensor<64x256xf32>, tensor<64xf32>) outs(%e0 : tensor<64x256xf32>) {
  ^bb0(%p: f32, %s: f32, %o: f32):
    %r = arith.divf %p, %s : f32
    linalg.yield %r : f32
  } -> tensor<64x256xf32>
  %e2 = tensor.empty() : tensor<64xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<64xf32>) -> tensor<64xf32>
  %s2 = linalg.generic {indexing_maps = [#id_d, #row_d], iterator_types = ["parallel", "reduction"]} ins(%y1 : tensor<64x256xf32>) outs(%f2 : tensor<64xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %e3 = tensor.empty() : tensor<64x256xf32>
  %y2 = linalg.generic {indexing_maps = [#id_d, #row_d, #id_d], iterator_types = ["parallel", "parallel"]} ins(%y1, %s2 : tensor<64x256xf32>, tensor<64xf32>) outs(%e3 : tensor<64x256xf32>) {
  ^bb0(%p: f32, %s: f32, %o: f32):
    %r = arith.divf %p, %s : f32
    linalg.yield %r : f32
  } -> tensor<64x256xf32>
  return %y2 : tensor<64x256xf32>
}

// -----

// A statistic over the rows (a column sum, read whole by every block) stays
// a reduction of its own before the loop: fused, each block would compute
// all of it again.

// CHECK-LABEL: func.func @column_statistic(
// CHECK: %[[C:.*]] = linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]
// CHECK: scf.forall
// CHECK-NOT: iterator_types = ["reduction", "parallel"]
// CHECK: iterator_types = ["parallel", "reduction"]
// CHECK: ins(%{{.*}}, %{{.*}}, %[[C]] :
// CHECK: scf.forall.in_parallel
#id_e = affine_map<(d0, d1) -> (d0, d1)>
#row_e = affine_map<(d0, d1) -> (d0)>
#col_e = affine_map<(d0, d1) -> (d1)>
func.func @column_statistic(%x: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %zero = arith.constant 0.0 : f32
  %ec = tensor.empty() : tensor<256xf32>
  %fc = linalg.fill ins(%zero : f32) outs(%ec : tensor<256xf32>) -> tensor<256xf32>
  %cs = linalg.generic {indexing_maps = [#id_e, #col_e], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<64x256xf32>) outs(%fc : tensor<256xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<256xf32>
  %er = tensor.empty() : tensor<64xf32>
  %fr = linalg.fill ins(%zero : f32) outs(%er : tensor<64xf32>) -> tensor<64xf32>
  %rs = linalg.generic {indexing_maps = [#id_e, #row_e], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<64x256xf32>) outs(%fr : tensor<64xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %e0 = tensor.empty() : tensor<64x256xf32>
  %y = linalg.generic {indexing_maps = [#id_e, #row_e, #col_e, #id_e], iterator_types = ["parallel", "parallel"]} ins(%x, %rs, %cs : tensor<64x256xf32>, tensor<64xf32>, tensor<256xf32>) outs(%e0 : tensor<64x256xf32>) {
  ^bb0(%p: f32, %r: f32, %c: f32, %o: f32):
    %d = arith.divf %p, %r : f32
    %m = arith.mulf %d, %c : f32
    linalg.yield %m : f32
  } -> tensor<64x256xf32>
  return %y : tensor<64x256xf32>
}
