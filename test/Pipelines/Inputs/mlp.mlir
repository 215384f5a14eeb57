// A two-layer MLP with a static batch of 16, as dist-opt imports it.
module {
  dist.param @w1 : tensor<4x8xf32>
  dist.param @w2 : tensor<8x3xf32>
  func.func @main(%x: tensor<16x4xf32> {dist.name = "x"}) -> (tensor<16x3xf32> {dist.name = "y"}) {
    %w1 = dist.get_param @w1 : tensor<4x8xf32> loc("/fc1/MatMul")
    %w2 = dist.get_param @w2 : tensor<8x3xf32> loc("/fc2/MatMul")
    %h = dist.matmul %x, %w1 : (tensor<16x4xf32>, tensor<4x8xf32>) -> tensor<16x8xf32> loc("/fc1/MatMul")
    %r = dist.relu %h : (tensor<16x8xf32>) -> tensor<16x8xf32> loc("/fc1/Relu")
    %y = dist.matmul %r, %w2 : (tensor<16x8xf32>, tensor<8x3xf32>) -> tensor<16x3xf32> loc("/fc2/MatMul")
    return %y : tensor<16x3xf32>
  }
}
