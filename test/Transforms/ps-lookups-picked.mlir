// RUN: dist-opt %s --dist-ps-lookups="tables=auto" | FileCheck %s

// Ids picked from a model input, as `sparse[:, i]` and `x.view(B, 2, 3)
// .transpose(1, 2)[:, 1]` export: the rows argument records which elements
// of each sample of the input the lookup reads (row-major, batch dropped),
// and what computed the ids is gone. `auto` takes the table of 1 MiB
// (40,000 x 8 floats) and leaves the small one in the model.
// CHECK-DAG: dist.param @big {dist.ps_table = #dist.ps_table<rows = 40000, dim = 8, shards = 1>} : tensor<40000x8xf32>
// CHECK-DAG: dist.param @small : tensor<10x8xf32>
// CHECK-LABEL: func.func @main
// CHECK-SAME: {dist.name = "big.rows", dist.ps_rows = {cols = array<i64: 2>, ids = "sparse", table = "big"}}
// CHECK-SAME: {dist.name = "big.rows.1", dist.ps_rows = {cols = array<i64: 3, 4, 5>, ids = "sparse", table = "big"}}
// CHECK-SAME: {dist.name = "big.rows.2", dist.ps_rows = {cols = array<i64: 1, 3, 5>, ids = "sparse", table = "big"}}
// CHECK-NOT: dist.gather %arg0
// CHECK-NOT: dist.transpose
// CHECK: dist.gather %{{.*}}, %arg0
// CHECK: return
module {
  dist.param @big : tensor<40000x8xf32>
  dist.param @small : tensor<10x8xf32>
  func.func @main(%sparse: tensor<?x6xi64> {dist.name = "sparse"}) -> (tensor<?x8xf32> {dist.name = "a"}, tensor<?x3x8xf32> {dist.name = "b"}, tensor<?x3x8xf32> {dist.name = "c"}, tensor<?x6x8xf32> {dist.name = "d"}) {
    %big = dist.get_param @big : tensor<40000x8xf32>
    %small = dist.get_param @small : tensor<10x8xf32>
    // sparse[:, 2]
    %c2 = dist.constant dense<2> : tensor<i64>
    %i0 = dist.gather %sparse, %c2 {axis = 1 : i64} : (tensor<?x6xi64>, tensor<i64>) -> tensor<?xi64>
    %a = dist.gather %big, %i0 {axis = 0 : i64} : (tensor<40000x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
    // sparse.view(B, 2, 3)[:, -1] as int32
    %shape = dist.constant dense<[-1, 2, 3]> : tensor<3xi64>
    %v = dist.reshape %sparse, %shape : (tensor<?x6xi64>, tensor<3xi64>) -> tensor<?x2x3xi64>
    %cm1 = dist.constant dense<-1> : tensor<i64>
    %i1 = dist.gather %v, %cm1 {axis = 1 : i64} : (tensor<?x2x3xi64>, tensor<i64>) -> tensor<?x3xi64>
    %i1c = dist.cast %i1 {to = i32} : (tensor<?x3xi64>) -> tensor<?x3xi32>
    %b = dist.gather %big, %i1c {axis = 0 : i64} : (tensor<40000x8xf32>, tensor<?x3xi32>) -> tensor<?x3x8xf32>
    // sparse.view(B, 3, 2).transpose(1, 2)[:, 1]
    %shape2 = dist.constant dense<[-1, 3, 2]> : tensor<3xi64>
    %w = dist.reshape %sparse, %shape2 : (tensor<?x6xi64>, tensor<3xi64>) -> tensor<?x3x2xi64>
    %t = dist.transpose %w {perm = array<i64: 0, 2, 1>} : (tensor<?x3x2xi64>) -> tensor<?x2x3xi64>
    %c1 = dist.constant dense<1> : tensor<i64>
    %i2 = dist.gather %t, %c1 {axis = 1 : i64} : (tensor<?x2x3xi64>, tensor<i64>) -> tensor<?x3xi64>
    %c = dist.gather %big, %i2 {axis = 0 : i64} : (tensor<40000x8xf32>, tensor<?x3xi64>) -> tensor<?x3x8xf32>
    %d = dist.gather %small, %sparse {axis = 0 : i64} : (tensor<10x8xf32>, tensor<?x6xi64>) -> tensor<?x6x8xf32>
    return %a, %b, %c, %d : tensor<?x8xf32>, tensor<?x3x8xf32>, tensor<?x3x8xf32>, tensor<?x6x8xf32>
  }
}
