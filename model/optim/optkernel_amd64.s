//go:build amd64 && !purego

#include "textflag.h"

// func adamAVX(n int, w, m, v, grad *float32, b1, c1, b2, c2, lrT, eps float32)
//
// For i in [0, n), n a positive multiple of 8 (c1 = 1-b1, c2 = 1-b2):
//
//	mi := b1*m[i] + c1*g[i]
//	vi := b2*v[i] + (c2*g[i])*g[i]
//	m[i], v[i] = mi, vi
//	w[i] = w[i] - (lrT*mi)/(sqrt(vi)+eps)
//
// with every product and sum rounded separately (no FMA), in the scalar
// loop's order, so the results are bit-identical to Adam.Apply's loop.
// Constants in Y10-Y15; two independent 8-lane blocks per iteration
// (Y0-Y4 and Y5-Y9) keep the divider and square-root unit busy.
TEXT ·adamAVX(SB), NOSPLIT, $0-64
	MOVQ n+0(FP), CX
	MOVQ w+8(FP), DI
	MOVQ m+16(FP), SI
	MOVQ v+24(FP), DX
	MOVQ grad+32(FP), R8
	VBROADCASTSS b1+40(FP), Y10
	VBROADCASTSS c1+44(FP), Y11
	VBROADCASTSS b2+48(FP), Y12
	VBROADCASTSS c2+52(FP), Y13
	VBROADCASTSS lrT+56(FP), Y14
	VBROADCASTSS eps+60(FP), Y15
	SHLQ $2, CX        // n in bytes
	MOVQ CX, BX
	ANDQ $-64, BX      // bytes covered by 16-lane iterations
	XORQ AX, AX        // byte offset
	CMPQ BX, $0
	JEQ adamAVX_tail8

adamAVX_loop16:
	VMOVUPS (R8)(AX*1), Y0
	VMOVUPS 32(R8)(AX*1), Y5
	VMULPS (SI)(AX*1), Y10, Y1
	VMULPS 32(SI)(AX*1), Y10, Y6
	VMULPS Y0, Y11, Y2
	VMULPS Y5, Y11, Y7
	VADDPS Y2, Y1, Y1          // mi
	VADDPS Y7, Y6, Y6
	VMULPS (DX)(AX*1), Y12, Y3
	VMULPS 32(DX)(AX*1), Y12, Y8
	VMULPS Y0, Y13, Y4
	VMULPS Y5, Y13, Y9
	VMULPS Y0, Y4, Y4
	VMULPS Y5, Y9, Y9
	VADDPS Y4, Y3, Y3          // vi
	VADDPS Y9, Y8, Y8
	VMOVUPS Y1, (SI)(AX*1)
	VMOVUPS Y6, 32(SI)(AX*1)
	VMOVUPS Y3, (DX)(AX*1)
	VMOVUPS Y8, 32(DX)(AX*1)
	VSQRTPS Y3, Y3
	VSQRTPS Y8, Y8
	VADDPS Y15, Y3, Y3         // sqrt(vi) + eps
	VADDPS Y15, Y8, Y8
	VMULPS Y1, Y14, Y1         // lrT * mi
	VMULPS Y6, Y14, Y6
	VDIVPS Y3, Y1, Y1          // lrT*mi / (sqrt(vi)+eps)
	VDIVPS Y8, Y6, Y6
	VMOVUPS (DI)(AX*1), Y2
	VMOVUPS 32(DI)(AX*1), Y7
	VSUBPS Y1, Y2, Y2          // w - step
	VSUBPS Y6, Y7, Y7
	VMOVUPS Y2, (DI)(AX*1)
	VMOVUPS Y7, 32(DI)(AX*1)
	ADDQ $64, AX
	CMPQ AX, BX
	JLT adamAVX_loop16

adamAVX_tail8:
	CMPQ AX, CX
	JGE adamAVX_done
	VMOVUPS (R8)(AX*1), Y0
	VMULPS (SI)(AX*1), Y10, Y1
	VMULPS Y0, Y11, Y2
	VADDPS Y2, Y1, Y1
	VMULPS (DX)(AX*1), Y12, Y3
	VMULPS Y0, Y13, Y4
	VMULPS Y0, Y4, Y4
	VADDPS Y4, Y3, Y3
	VMOVUPS Y1, (SI)(AX*1)
	VMOVUPS Y3, (DX)(AX*1)
	VSQRTPS Y3, Y3
	VADDPS Y15, Y3, Y3
	VMULPS Y1, Y14, Y1
	VDIVPS Y3, Y1, Y1
	VMOVUPS (DI)(AX*1), Y2
	VSUBPS Y1, Y2, Y2
	VMOVUPS Y2, (DI)(AX*1)

adamAVX_done:
	VZEROUPPER
	RET

// func adagradAVX(n int, w, acc, grad *float32, lr, eps float32)
//
// For i in [0, n), n a positive multiple of 8:
//
//	a := acc[i] + g[i]*g[i]
//	acc[i] = a
//	w[i] = w[i] - (lr*g[i])/(sqrt(a)+eps)
//
// every operation rounded separately (no FMA), in Adagrad.Apply's order,
// so the results are bit-identical to its loop. Constants in Y14-Y15; two
// independent 8-lane blocks per iteration, as adamAVX.
TEXT ·adagradAVX(SB), NOSPLIT, $0-40
	MOVQ n+0(FP), CX
	MOVQ w+8(FP), DI
	MOVQ acc+16(FP), SI
	MOVQ grad+24(FP), R8
	VBROADCASTSS lr+32(FP), Y14
	VBROADCASTSS eps+36(FP), Y15
	SHLQ $2, CX        // n in bytes
	MOVQ CX, BX
	ANDQ $-64, BX      // bytes covered by 16-lane iterations
	XORQ AX, AX        // byte offset
	CMPQ BX, $0
	JEQ adagradAVX_tail8

adagradAVX_loop16:
	VMOVUPS (R8)(AX*1), Y0
	VMOVUPS 32(R8)(AX*1), Y5
	VMULPS Y0, Y0, Y1          // g*g
	VMULPS Y5, Y5, Y6
	VADDPS (SI)(AX*1), Y1, Y1  // a = acc + g*g
	VADDPS 32(SI)(AX*1), Y6, Y6
	VMOVUPS Y1, (SI)(AX*1)
	VMOVUPS Y6, 32(SI)(AX*1)
	VSQRTPS Y1, Y1
	VSQRTPS Y6, Y6
	VADDPS Y15, Y1, Y1         // sqrt(a) + eps
	VADDPS Y15, Y6, Y6
	VMULPS Y0, Y14, Y0         // lr * g
	VMULPS Y5, Y14, Y5
	VDIVPS Y1, Y0, Y0          // lr*g / (sqrt(a)+eps)
	VDIVPS Y6, Y5, Y5
	VMOVUPS (DI)(AX*1), Y2
	VMOVUPS 32(DI)(AX*1), Y7
	VSUBPS Y0, Y2, Y2          // w - step
	VSUBPS Y5, Y7, Y7
	VMOVUPS Y2, (DI)(AX*1)
	VMOVUPS Y7, 32(DI)(AX*1)
	ADDQ $64, AX
	CMPQ AX, BX
	JLT adagradAVX_loop16

adagradAVX_tail8:
	CMPQ AX, CX
	JGE adagradAVX_done
	VMOVUPS (R8)(AX*1), Y0
	VMULPS Y0, Y0, Y1
	VADDPS (SI)(AX*1), Y1, Y1
	VMOVUPS Y1, (SI)(AX*1)
	VSQRTPS Y1, Y1
	VADDPS Y15, Y1, Y1
	VMULPS Y0, Y14, Y0
	VDIVPS Y1, Y0, Y0
	VMOVUPS (DI)(AX*1), Y2
	VSUBPS Y0, Y2, Y2
	VMOVUPS Y2, (DI)(AX*1)

adagradAVX_done:
	VZEROUPPER
	RET
