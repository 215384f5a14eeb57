// RUN: dist-opt %s --split-input-file --verify-diagnostics --dist-ps-lookups="tables=emb_*"

// A table tied to the output projection cannot go to the servers: the
// error names the product, and the module is left as it was.
module {
  dist.param @emb_tied : tensor<100x8xf32>
  func.func @main(%ids: tensor<4xi64> {dist.name = "ids"}) -> (tensor<4x100xf32> {dist.name = "logits"}) {
    %e = dist.get_param @emb_tied : tensor<100x8xf32>
    %x = dist.gather %e, %ids {axis = 0 : i64} : (tensor<100x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
    // expected-error @+1 {{cannot put table 'emb_tied' on the parameter server: it is read by 'dist.transpose'}}
    %t = dist.transpose %e {perm = array<i64: 1, 0>} : (tensor<100x8xf32>) -> tensor<8x100xf32>
    %y = dist.matmul %x, %t : (tensor<4x8xf32>, tensor<8x100xf32>) -> tensor<4x100xf32>
    return %y : tensor<4x100xf32>
  }
}

// -----

// Ids computed by arithmetic are not picked from an input.
module {
  dist.param @emb_c : tensor<100x8xf32>
  func.func @main(%ids: tensor<4xi64> {dist.name = "ids"}) -> (tensor<4x8xf32> {dist.name = "y"}) {
    %e = dist.get_param @emb_c : tensor<100x8xf32>
    %i = dist.add %ids, %ids : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
    // expected-error @+1 {{cannot put table 'emb_c' on the parameter server: the ids are computed by 'dist.add'}}
    %x = dist.gather %e, %i {axis = 0 : i64} : (tensor<100x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
    return %x : tensor<4x8xf32>
  }
}

// -----

// A gather on the batch axis picks samples, not elements of each sample.
module {
  dist.param @emb_b : tensor<100x8xf32>
  func.func @main(%ids: tensor<4x3xi64> {dist.name = "ids"}) -> (tensor<2x3x8xf32> {dist.name = "y"}) {
    %e = dist.get_param @emb_b : tensor<100x8xf32>
    %c = dist.constant dense<[0, 2]> : tensor<2xi64>
    %i = dist.gather %ids, %c {axis = 0 : i64} : (tensor<4x3xi64>, tensor<2xi64>) -> tensor<2x3xi64>
    // expected-error @+1 {{cannot put table 'emb_b' on the parameter server: the ids are computed by 'dist.gather'}}
    %x = dist.gather %e, %i {axis = 0 : i64} : (tensor<100x8xf32>, tensor<2x3xi64>) -> tensor<2x3x8xf32>
    return %x : tensor<2x3x8xf32>
  }
}
