// REQUIRES: cuda-toolkit
// RUN: dist-opt %s -split-input-file -verify-diagnostics -p 'builtin.module(nvvm-attach-target{chip=sm_80 features=+ptx80},nvvm-attach-target{chip=sm_90 features=+ptx80},gpu.module(convert-gpu-to-nvvm),gpu-module-to-binary{format=bin toolkit=%cuda_home},dist-gpu-fat-binary{toolkit=%cuda_home})' | FileCheck %s
// RUN: dist-opt %s -split-input-file -p 'builtin.module(nvvm-attach-target{chip=sm_80 features=+ptx80},nvvm-attach-target{chip=sm_90 features=+ptx80},gpu.module(convert-gpu-to-nvvm),gpu-module-to-binary{format=bin toolkit=%cuda_home},dist-gpu-fat-binary{toolkit=%cuda_home})' -o %t.mlir
// RUN: %python %scripts/cuda_images.py %t.mlir | FileCheck %s --check-prefix=IMAGES

// The cubins of both architectures become one fat binary (its magic
// 0xBA55ED50, little-endian) in the section the toolkit's tools read.
// CHECK: gpu.binary @kernels {{ *}}[#gpu.object<#nvvm.target<chip = "sm_80", features = "+ptx80">, properties = {section = ".nv_fatbin"}, "P\EDU\BA
// CHECK-NOT: #gpu.object
// IMAGES: sm_80 cubin
// IMAGES-NEXT: sm_90 cubin
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%a: memref<16xf32>) kernel {
      %i = gpu.thread_id x
      %x = memref.load %a[%i] : memref<16xf32>
      %y = arith.mulf %x, %x : f32
      memref.store %y, %a[%i] : memref<16xf32>
      gpu.return
    }
  }
}
