/**
 * TensorFlow Java on bfc4j memory: {@link io.github.bfc4j.tensorflow.BfcTensors} makes TensorFlow
 * Java tensors whose buffers come from a {@code BfcAllocator} and go back to it when TensorFlow
 * drops them; {@link io.github.bfc4j.tensorflow.TensorFlowExample} runs a graph on them. Only
 * these buffers are bfc4j's: TensorFlow allocates its intermediates and outputs itself (see
 * docs/integrations.md).
 */
package io.github.bfc4j.tensorflow;
