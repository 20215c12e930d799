//go:build darwin && !kgen_nometal

package metal

import (
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego/objc"
)

// Selectors of MTLCommandQueue, MTLCommandBuffer and MTLComputeCommandEncoder (MTLCommandQueue.h,
// MTLCommandBuffer.h, MTLComputeCommandEncoder.h, MTLCommandEncoder.h).
var (
	selCommandBuffer                             = objc.RegisterName("commandBuffer")
	selComputeCommandEncoder                     = objc.RegisterName("computeCommandEncoder")
	selSetComputePipelineState                   = objc.RegisterName("setComputePipelineState:")
	selSetBufferOffsetAtIndex                    = objc.RegisterName("setBuffer:offset:atIndex:")
	selSetBytesLengthAtIndex                     = objc.RegisterName("setBytes:length:atIndex:")
	selDispatchThreadgroupsThreadsPerThreadgroup = objc.RegisterName("dispatchThreadgroups:threadsPerThreadgroup:")
	selEndEncoding                               = objc.RegisterName("endEncoding")
	selCommit                                    = objc.RegisterName("commit")
	selWaitUntilCompleted                        = objc.RegisterName("waitUntilCompleted")
	selStatus                                    = objc.RegisterName("status")
	selError                                     = objc.RegisterName("error")
	selGPUStartTime                              = objc.RegisterName("GPUStartTime")
	selGPUEndTime                                = objc.RegisterName("GPUEndTime")
)

// run encodes the launches in one compute command encoder (serial dispatch) of a new command
// buffer of the device's queue, commits it and waits. The command buffer and the encoder are
// autoreleased (+0) and live until withPool drains.
func (m *mtlDriver) run(ls []launch) (t Timing, err error) {
	withPool(func() {
		cb := m.queue.Send(selCommandBuffer)
		if cb == 0 {
			err = errNil("commandBuffer", "no command buffer")
			return
		}
		enc := cb.Send(selComputeCommandEncoder)
		if enc == 0 {
			err = errNil("computeCommandEncoder", "no encoder")
			return
		}
		for _, l := range ls {
			encode(enc, l)
		}
		enc.Send(selEndEncoding)
		cb.Send(selCommit)
		cb.Send(selWaitUntilCompleted)
		if s := CommandBufferStatus(objc.Send[uint64](cb, selStatus)); s != StatusCompleted {
			err = nsError("commit (status "+s.String()+")", cb.Send(selError))
			return
		}
		t = Timing{GPUStart: objc.Send[float64](cb, selGPUStartTime), GPUEnd: objc.Send[float64](cb, selGPUEndTime)}
	})
	return t, err
}

// encode sets l's pipeline state and arguments on enc and dispatches its threadgroups.
func encode(enc objc.ID, l launch) {
	enc.Send(selSetComputePipelineState, objc.ID(l.pso))
	for i, a := range l.args {
		if a.buf != 0 {
			enc.Send(selSetBufferOffsetAtIndex, objc.ID(a.buf), uint64(0), uint64(i))
		} else {
			// setBytes:length:atIndex: copies the bytes into the command before it returns.
			enc.Send(selSetBytesLengthAtIndex, unsafe.Pointer(&a.bytes[0]), uint64(len(a.bytes)), uint64(i))
			runtime.KeepAlive(a.bytes)
		}
	}
	enc.Send(selDispatchThreadgroupsThreadsPerThreadgroup, Size(l.grid), Size(l.threads))
}
