// RUN: dist-opt %s --dist-ps-lookups="tables=emb_*" | FileCheck %s
// RUN: dist-opt %s --dist-ps-lookups="tables=all shards=2 optimizer=adagrad lr=0.1" | FileCheck %s --check-prefix=ALL
// RUN: dist-opt %s --dist-ps-lookups="tables=auto" | FileCheck %s --check-prefix=AUTO
// RUN: not dist-opt %s --dist-ps-lookups="tables=all optimizer=momentum" 2>&1 | FileCheck %s --check-prefix=OPT
// RUN: dist-opt %s --dist-ps-lookups="tables=emb_a" \
// RUN:   --dist-build-train-step="loss=mse optimizer=adam" | FileCheck %s --check-prefix=TRAIN
// RUN: dist-opt %s --dist-ps-lookups="tables=emb_a init=normal:0,0.01" | FileCheck %s --check-prefix=INIT
// RUN: not dist-opt %s --dist-ps-lookups="tables=emb_a init=uniform:1,0" 2>&1 | FileCheck %s --check-prefix=LOWHIGH
// RUN: not dist-opt %s --dist-ps-lookups="tables=emb_a init=zeros" 2>&1 | FileCheck %s --check-prefix=KIND
// RUN: not dist-opt %s --dist-ps-lookups="tables=nope" 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not dist-opt %s --dist-ps-lookups="tables=dense" 2>&1 | FileCheck %s --check-prefix=RANK
// RUN: not dist-opt %s --dist-ps-lookups="tables=emb_a" \
// RUN:   --dist-build-train-step="loss=mse clip-grad-norm=1" 2>&1 | FileCheck %s --check-prefix=CLIP
// NONE: error: --ps-tables 'nope': the model has no initializer of that name
// LOWHIGH: error: --ps-init: 'uniform:1,0': LOW must be below HIGH
// KIND: error: --ps-init: 'zeros' is not rows, uniform:LOW,HIGH or normal:MEAN,STD
// Rows drawn by the servers: the module says from what.
// INIT: module attributes {dist.ps_optimizer = {{{.*}}init = "normal", init_a = 0.000000e+00 : f64, init_b = 1.000000e-02 : f64, lr
// RANK: error: --ps-tables 'dense': the initializer has type 'tensor<8xf32>', not a floating-point table of rank 2
// OPT: error: --ps-optimizer 'momentum': the servers apply sgd, adagrad or adam
// CLIP: error: --clip-grad-norm with tables on the parameter server (--ps-tables) is not supported

// Two tables, one looked up twice: each lookup becomes an argument holding
// the pulled rows, named after its table, and the tables are marked for
// the servers and read no more. `all` takes the same tables (only lookups
// read them; @w is read by a product) and the given shard count.
// CHECK-DAG: dist.param @emb_a {dist.ps_table = #dist.ps_table<rows = 100, dim = 8, shards = 1>} : tensor<100x8xf32>
// CHECK-DAG: dist.param @emb_b {dist.ps_table = #dist.ps_table<rows = 50, dim = 8, shards = 1>} : tensor<50x8xf32>
// CHECK-DAG: dist.param @w : tensor<8x1xf32>
// CHECK-LABEL: func.func @main
// CHECK-SAME: %[[IA:[^:]*]]: tensor<?xi64> {dist.name = "ids_a"}
// CHECK-SAME: %[[IB:[^:]*]]: tensor<?xi64> {dist.name = "ids_b"}
// CHECK-SAME: %[[RA:[^:]*]]: tensor<?x8xf32> {dist.name = "emb_a.rows", dist.ps_rows = {cols = array<i64: 0>, ids = "ids_a", table = "emb_a"}}
// CHECK-SAME: %[[RA1:[^:]*]]: tensor<?x8xf32> {dist.name = "emb_a.rows.1", dist.ps_rows = {cols = array<i64: 0>, ids = "ids_b", table = "emb_a"}}
// CHECK-SAME: %[[RB:[^:]*]]: tensor<?x8xf32> {dist.name = "emb_b.rows", dist.ps_rows = {cols = array<i64: 0>, ids = "ids_b", table = "emb_b"}}
// CHECK-NOT: dist.gather
// CHECK-NOT: dist.get_param @emb
// CHECK: dist.add %[[RA]], %[[RA1]]
// CHECK: dist.add %{{.*}}, %[[RB]]
// ALL: module attributes {dist.ps_optimizer = {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-10 : f64, init = "rows", init_a = 0.000000e+00 : f64, init_b = 0.000000e+00 : f64, lr = 1.000000e-01 : f64, optimizer = "adagrad"}}
// ALL-DAG: dist.param @emb_a {dist.ps_table = #dist.ps_table<rows = 100, dim = 8, shards = 2>}
// ALL-DAG: dist.param @emb_b {dist.ps_table = #dist.ps_table<rows = 50, dim = 8, shards = 2>}
// ALL-DAG: dist.param @w : tensor<8x1xf32>
// `auto` serves tables of 1 MiB or more: these stay in the model.
// AUTO-NOT: dist.ps_table
// AUTO-NOT: dist.ps_optimizer
// The training step returns the pulled rows' gradients after the loss and
// updates only the dense parameter; emb_b stays in the model.
// The ids stay among its inputs (the runtime pulls by them) although the
// step itself no longer reads ids_a.
// TRAIN-LABEL: func.func @train_step
// TRAIN-SAME: {dist.name = "ids_a"}
// TRAIN-SAME: {dist.name = "emb_a.rows", dist.ps_rows = {cols = array<i64: 0>, ids = "ids_a", table = "emb_a"}}
// TRAIN-SAME: -> (tensor<f32> {dist.name = "loss"}, tensor<?x8xf32> {dist.name = "emb_a.rows.grad"}, tensor<?x8xf32> {dist.name = "emb_a.rows.1.grad"})
// TRAIN-DAG: dist.set_param @w
// TRAIN-DAG: dist.set_param @emb_b
// TRAIN-NOT: dist.set_param @emb_a
module {
  dist.param @emb_a : tensor<100x8xf32>
  dist.param @emb_b : tensor<50x8xf32>
  dist.param @w : tensor<8x1xf32>
  dist.param @dense : tensor<8xf32>
  func.func @main(%ia: tensor<?xi64> {dist.name = "ids_a"}, %ib: tensor<?xi64> {dist.name = "ids_b"}) -> (tensor<?x1xf32> {dist.name = "y"}) {
    %a = dist.get_param @emb_a : tensor<100x8xf32>
    %b = dist.get_param @emb_b : tensor<50x8xf32>
    %w = dist.get_param @w : tensor<8x1xf32>
    %d = dist.get_param @dense : tensor<8xf32>
    %ea = dist.gather %a, %ia {axis = 0 : i64} : (tensor<100x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
    %ea1 = dist.gather %a, %ib {axis = 0 : i64} : (tensor<100x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
    %eb = dist.gather %b, %ib {axis = 0 : i64} : (tensor<50x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
    %s = dist.add %ea, %ea1 : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
    %t = dist.add %s, %eb : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
    %u = dist.add %t, %d : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
    %y = dist.matmul %u, %w : (tensor<?x8xf32>, tensor<8x1xf32>) -> tensor<?x1xf32>
    return %y : tensor<?x1xf32>
  }
}
