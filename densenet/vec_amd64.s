//go:build amd64 && !purego

#include "textflag.h"

// The element-wise kernels of vec_amd64.go: AVX2 and FMA, 8 floats per
// step. Minima and maxima take z as the operand returned when it is NaN,
// so a NaN propagates as in the Go loops.

// func preluAdd2AVX2(act, z, x, y, alpha *float32, n int)
TEXT ·preluAdd2AVX2(SB), NOSPLIT, $0-48
	MOVQ act+0(FP), DI
	MOVQ z+8(FP), SI
	MOVQ x+16(FP), R8
	MOVQ y+24(FP), R9
	MOVQ alpha+32(FP), R10
	MOVQ n+40(FP), CX
	VXORPS Y15, Y15, Y15
	XORQ AX, AX
add2:
	VMOVUPS (R8)(AX*4), Y0
	VADDPS (R9)(AX*4), Y0, Y0
	VADDPS (SI)(AX*4), Y0, Y0
	VMOVUPS Y0, (SI)(AX*4)
	VMINPS Y0, Y15, Y1
	VMAXPS Y0, Y15, Y2
	VFMADD231PS (R10)(AX*4), Y1, Y2
	VMOVUPS Y2, (DI)(AX*4)
	ADDQ $8, AX
	CMPQ AX, CX
	JLT add2
	VZEROUPPER
	RET

// func preluAdd1AVX2(act, z, x, alpha *float32, n int)
TEXT ·preluAdd1AVX2(SB), NOSPLIT, $0-40
	MOVQ act+0(FP), DI
	MOVQ z+8(FP), SI
	MOVQ x+16(FP), R8
	MOVQ alpha+24(FP), R10
	MOVQ n+32(FP), CX
	VXORPS Y15, Y15, Y15
	XORQ AX, AX
add1:
	VMOVUPS (SI)(AX*4), Y0
	VADDPS (R8)(AX*4), Y0, Y0
	VMOVUPS Y0, (SI)(AX*4)
	VMINPS Y0, Y15, Y1
	VMAXPS Y0, Y15, Y2
	VFMADD231PS (R10)(AX*4), Y1, Y2
	VMOVUPS Y2, (DI)(AX*4)
	ADDQ $8, AX
	CMPQ AX, CX
	JLT add1
	VZEROUPPER
	RET

// func preluBackAVX2(grad, z, alpha, galpha *float32, rows, h, n int)
//
// Y14 = 1.0 in every lane; per row, per 8 columns: the slope is blended
// from alpha and 1 by z's sign bit (VBLENDVPS reads the sign bit only).
TEXT ·preluBackAVX2(SB), NOSPLIT, $0-56
	MOVQ grad+0(FP), DI
	MOVQ z+8(FP), SI
	MOVQ alpha+16(FP), R10
	MOVQ galpha+24(FP), R11
	MOVQ rows+32(FP), DX
	MOVQ h+40(FP), R8
	MOVQ n+48(FP), CX
	SHLQ $2, R8
	MOVL $0x3f800000, AX
	MOVL AX, X14
	VBROADCASTSS X14, Y14
	VXORPS Y15, Y15, Y15
row:
	XORQ AX, AX
col:
	VMOVUPS (SI)(AX*4), Y0
	VMOVUPS (DI)(AX*4), Y1
	VMOVUPS (R10)(AX*4), Y2
	VMINPS Y0, Y15, Y3
	VMOVUPS (R11)(AX*4), Y4
	VFMADD231PS Y3, Y1, Y4
	VMOVUPS Y4, (R11)(AX*4)
	VBLENDVPS Y0, Y2, Y14, Y5
	VMULPS Y5, Y1, Y1
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ $8, AX
	CMPQ AX, CX
	JLT col
	ADDQ R8, SI
	ADDQ R8, DI
	DECQ DX
	JNZ row
	VZEROUPPER
	RET

// func axpyAVX2(dst, x *float32, n int, alpha float32)
TEXT ·axpyAVX2(SB), NOSPLIT, $0-28
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS alpha+24(FP), Y15
	XORQ AX, AX
axpy:
	VMOVUPS (DI)(AX*4), Y0
	VFMADD231PS (SI)(AX*4), Y15, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ $8, AX
	CMPQ AX, CX
	JLT axpy
	VZEROUPPER
	RET

// func tanhAVX2(x *float32, n int)
//
// tanhRational on 8 lanes: clamp to [-9, 9], p and q in the same Estrin
// scheme with fused multiply-adds, v·p/q, clamp to [-1, 1]. The clamps
// return the lane's own value when it is NaN, so NaN stays NaN.
TEXT ·tanhAVX2(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	VMOVUPS tanhv<>+0(SB), Y8
	VMOVUPS tanhv<>+32(SB), Y9
	VMOVUPS tanhv<>+64(SB), Y10
	VMOVUPS tanhv<>+96(SB), Y11
	XORQ AX, AX
tanh:
	VMOVUPS (DI)(AX*4), Y0
	VMINPS Y0, Y8, Y0
	VMAXPS Y0, Y9, Y0
	VMULPS Y0, Y0, Y1
	VMULPS Y1, Y1, Y2
	VMOVUPS tanhv<>+160(SB), Y3
	VFMADD213PS tanhv<>+128(SB), Y1, Y3
	VMOVUPS tanhv<>+224(SB), Y4
	VFMADD213PS tanhv<>+192(SB), Y1, Y4
	VFMADD231PS Y4, Y2, Y3
	VMOVUPS tanhv<>+288(SB), Y5
	VFMADD213PS tanhv<>+256(SB), Y1, Y5
	VMOVUPS tanhv<>+320(SB), Y6
	VFMADD231PS Y6, Y2, Y5
	VMULPS Y2, Y2, Y7
	VFMADD231PS Y5, Y7, Y3
	VMOVUPS tanhv<>+384(SB), Y5
	VFMADD213PS tanhv<>+352(SB), Y1, Y5
	VMOVUPS tanhv<>+448(SB), Y6
	VFMADD213PS tanhv<>+416(SB), Y1, Y6
	VFMADD231PS Y6, Y2, Y5
	VMULPS Y0, Y3, Y3
	VDIVPS Y5, Y3, Y3
	VMINPS Y3, Y10, Y3
	VMAXPS Y3, Y11, Y3
	VMOVUPS Y3, (DI)(AX*4)
	ADDQ $8, AX
	CMPQ AX, CX
	JLT tanh
	VZEROUPPER
	RET

// tanhv holds tanhAVX2's constants, each in 8 lanes (32 bytes): 9, -9,
// 1, -1, then tanhRational's coefficients c0..c6 of p and d0..d3 of q
// (float32 bits).
DATA tanhv<>+0(SB)/4, $0x41100000 // 9
DATA tanhv<>+4(SB)/4, $0x41100000
DATA tanhv<>+8(SB)/4, $0x41100000
DATA tanhv<>+12(SB)/4, $0x41100000
DATA tanhv<>+16(SB)/4, $0x41100000
DATA tanhv<>+20(SB)/4, $0x41100000
DATA tanhv<>+24(SB)/4, $0x41100000
DATA tanhv<>+28(SB)/4, $0x41100000
DATA tanhv<>+32(SB)/4, $0xc1100000 // -9
DATA tanhv<>+36(SB)/4, $0xc1100000
DATA tanhv<>+40(SB)/4, $0xc1100000
DATA tanhv<>+44(SB)/4, $0xc1100000
DATA tanhv<>+48(SB)/4, $0xc1100000
DATA tanhv<>+52(SB)/4, $0xc1100000
DATA tanhv<>+56(SB)/4, $0xc1100000
DATA tanhv<>+60(SB)/4, $0xc1100000
DATA tanhv<>+64(SB)/4, $0x3f800000 // 1
DATA tanhv<>+68(SB)/4, $0x3f800000
DATA tanhv<>+72(SB)/4, $0x3f800000
DATA tanhv<>+76(SB)/4, $0x3f800000
DATA tanhv<>+80(SB)/4, $0x3f800000
DATA tanhv<>+84(SB)/4, $0x3f800000
DATA tanhv<>+88(SB)/4, $0x3f800000
DATA tanhv<>+92(SB)/4, $0x3f800000
DATA tanhv<>+96(SB)/4, $0xbf800000 // -1
DATA tanhv<>+100(SB)/4, $0xbf800000
DATA tanhv<>+104(SB)/4, $0xbf800000
DATA tanhv<>+108(SB)/4, $0xbf800000
DATA tanhv<>+112(SB)/4, $0xbf800000
DATA tanhv<>+116(SB)/4, $0xbf800000
DATA tanhv<>+120(SB)/4, $0xbf800000
DATA tanhv<>+124(SB)/4, $0xbf800000
DATA tanhv<>+128(SB)/4, $0x3ba059dc // c0
DATA tanhv<>+132(SB)/4, $0x3ba059dc
DATA tanhv<>+136(SB)/4, $0x3ba059dc
DATA tanhv<>+140(SB)/4, $0x3ba059dc
DATA tanhv<>+144(SB)/4, $0x3ba059dc
DATA tanhv<>+148(SB)/4, $0x3ba059dc
DATA tanhv<>+152(SB)/4, $0x3ba059dc
DATA tanhv<>+156(SB)/4, $0x3ba059dc
DATA tanhv<>+160(SB)/4, $0x3a270ded // c1
DATA tanhv<>+164(SB)/4, $0x3a270ded
DATA tanhv<>+168(SB)/4, $0x3a270ded
DATA tanhv<>+172(SB)/4, $0x3a270ded
DATA tanhv<>+176(SB)/4, $0x3a270ded
DATA tanhv<>+180(SB)/4, $0x3a270ded
DATA tanhv<>+184(SB)/4, $0x3a270ded
DATA tanhv<>+188(SB)/4, $0x3a270ded
DATA tanhv<>+192(SB)/4, $0x3779434a // c2
DATA tanhv<>+196(SB)/4, $0x3779434a
DATA tanhv<>+200(SB)/4, $0x3779434a
DATA tanhv<>+204(SB)/4, $0x3779434a
DATA tanhv<>+208(SB)/4, $0x3779434a
DATA tanhv<>+212(SB)/4, $0x3779434a
DATA tanhv<>+216(SB)/4, $0x3779434a
DATA tanhv<>+220(SB)/4, $0x3779434a
DATA tanhv<>+224(SB)/4, $0x335c0041 // c3
DATA tanhv<>+228(SB)/4, $0x335c0041
DATA tanhv<>+232(SB)/4, $0x335c0041
DATA tanhv<>+236(SB)/4, $0x335c0041
DATA tanhv<>+240(SB)/4, $0x335c0041
DATA tanhv<>+244(SB)/4, $0x335c0041
DATA tanhv<>+248(SB)/4, $0x335c0041
DATA tanhv<>+252(SB)/4, $0x335c0041
DATA tanhv<>+256(SB)/4, $0xaebd37ff // c4
DATA tanhv<>+260(SB)/4, $0xaebd37ff
DATA tanhv<>+264(SB)/4, $0xaebd37ff
DATA tanhv<>+268(SB)/4, $0xaebd37ff
DATA tanhv<>+272(SB)/4, $0xaebd37ff
DATA tanhv<>+276(SB)/4, $0xaebd37ff
DATA tanhv<>+280(SB)/4, $0xaebd37ff
DATA tanhv<>+284(SB)/4, $0xaebd37ff
DATA tanhv<>+288(SB)/4, $0x2a61337e // c5
DATA tanhv<>+292(SB)/4, $0x2a61337e
DATA tanhv<>+296(SB)/4, $0x2a61337e
DATA tanhv<>+300(SB)/4, $0x2a61337e
DATA tanhv<>+304(SB)/4, $0x2a61337e
DATA tanhv<>+308(SB)/4, $0x2a61337e
DATA tanhv<>+312(SB)/4, $0x2a61337e
DATA tanhv<>+316(SB)/4, $0x2a61337e
DATA tanhv<>+320(SB)/4, $0xa59f25c0 // c6
DATA tanhv<>+324(SB)/4, $0xa59f25c0
DATA tanhv<>+328(SB)/4, $0xa59f25c0
DATA tanhv<>+332(SB)/4, $0xa59f25c0
DATA tanhv<>+336(SB)/4, $0xa59f25c0
DATA tanhv<>+340(SB)/4, $0xa59f25c0
DATA tanhv<>+344(SB)/4, $0xa59f25c0
DATA tanhv<>+348(SB)/4, $0xa59f25c0
DATA tanhv<>+352(SB)/4, $0x3ba059dd // d0
DATA tanhv<>+356(SB)/4, $0x3ba059dd
DATA tanhv<>+360(SB)/4, $0x3ba059dd
DATA tanhv<>+364(SB)/4, $0x3ba059dd
DATA tanhv<>+368(SB)/4, $0x3ba059dd
DATA tanhv<>+372(SB)/4, $0x3ba059dd
DATA tanhv<>+376(SB)/4, $0x3ba059dd
DATA tanhv<>+380(SB)/4, $0x3ba059dd
DATA tanhv<>+384(SB)/4, $0x3b14aa05 // d1
DATA tanhv<>+388(SB)/4, $0x3b14aa05
DATA tanhv<>+392(SB)/4, $0x3b14aa05
DATA tanhv<>+396(SB)/4, $0x3b14aa05
DATA tanhv<>+400(SB)/4, $0x3b14aa05
DATA tanhv<>+404(SB)/4, $0x3b14aa05
DATA tanhv<>+408(SB)/4, $0x3b14aa05
DATA tanhv<>+412(SB)/4, $0x3b14aa05
DATA tanhv<>+416(SB)/4, $0x38f895d6 // d2
DATA tanhv<>+420(SB)/4, $0x38f895d6
DATA tanhv<>+424(SB)/4, $0x38f895d6
DATA tanhv<>+428(SB)/4, $0x38f895d6
DATA tanhv<>+432(SB)/4, $0x38f895d6
DATA tanhv<>+436(SB)/4, $0x38f895d6
DATA tanhv<>+440(SB)/4, $0x38f895d6
DATA tanhv<>+444(SB)/4, $0x38f895d6
DATA tanhv<>+448(SB)/4, $0x35a0d3d8 // d3
DATA tanhv<>+452(SB)/4, $0x35a0d3d8
DATA tanhv<>+456(SB)/4, $0x35a0d3d8
DATA tanhv<>+460(SB)/4, $0x35a0d3d8
DATA tanhv<>+464(SB)/4, $0x35a0d3d8
DATA tanhv<>+468(SB)/4, $0x35a0d3d8
DATA tanhv<>+472(SB)/4, $0x35a0d3d8
DATA tanhv<>+476(SB)/4, $0x35a0d3d8
GLOBL tanhv<>(SB), RODATA|NOPTR, $480

// func gruBackAVX2(c, dht, hp, gates, dg, dp *float32, h, n int, a float32) float32
//
// gruCellBack's loop over the first n columns (n a positive multiple of
// 8); h is the stride between the parts of gates (r, z, n, W_hn·h+b_hn),
// dg and dp. Returns the partial Σ du·(1−z) of those columns.
TEXT ·gruBackAVX2(SB), NOSPLIT, $0-76
	MOVQ c+0(FP), DI
	MOVQ dht+8(FP), SI
	MOVQ hp+16(FP), DX
	MOVQ gates+24(FP), R10
	MOVQ dg+32(FP), R11
	MOVQ dp+40(FP), R12
	MOVQ h+48(FP), R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9
	MOVQ n+56(FP), CX
	SHRQ $3, CX
	VBROADCASTSS a+64(FP), Y14
	VMOVUPS tanhv<>+64(SB), Y15
	VXORPS Y13, Y13, Y13
gruback:
	VMOVUPS (R10), Y0
	VMOVUPS (R10)(R8*1), Y1
	VMOVUPS (R10)(R8*2), Y2
	VMOVUPS (DI), Y3
	VADDPS (SI), Y3, Y3
	VSUBPS Y1, Y15, Y4
	VMULPS Y4, Y14, Y5
	VSUBPS (DX), Y2, Y6
	VMULPS Y6, Y3, Y6
	VFMADD231PS Y4, Y6, Y13
	VSUBPS Y5, Y15, Y7
	VMULPS Y7, Y3, Y7
	VMOVUPS Y7, (DI)
	VMULPS Y5, Y3, Y8
	VMOVAPS Y2, Y9
	VFNMADD213PS Y15, Y2, Y9
	VMULPS Y9, Y8, Y8
	VSUBPS Y0, Y15, Y10
	VMULPS Y0, Y10, Y10
	VMULPS (R10)(R9*1), Y10, Y10
	VMULPS Y8, Y10, Y10
	VMULPS Y1, Y6, Y11
	VMULPS Y5, Y11, Y11
	VXORPS Y12, Y12, Y12
	VSUBPS Y11, Y12, Y11
	VMULPS Y0, Y8, Y12
	VMOVUPS Y10, (R11)
	VMOVUPS Y11, (R11)(R8*1)
	VMOVUPS Y12, (R11)(R8*2)
	VADDPS (R12), Y10, Y10
	VMOVUPS Y10, (R12)
	VADDPS (R12)(R8*1), Y11, Y11
	VMOVUPS Y11, (R12)(R8*1)
	VADDPS (R12)(R8*2), Y8, Y8
	VMOVUPS Y8, (R12)(R8*2)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, R10
	ADDQ $32, R11
	ADDQ $32, R12
	DECQ CX
	JNZ gruback
	VEXTRACTF128 $1, Y13, X0
	VADDPS X0, X13, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+72(FP)
	RET

// func gruGatesAVX2(gates, gh, gi, bin, bhn *float32, h, n int)
//
// gruCell's middle loop over the first n columns (n a positive multiple
// of 8), after the tanh of the r and z pre-activations: r = ½ + ½·r,
// z = ½ + ½·z, W_hn·h + b_hn kept in gates' fourth part, and the n
// pre-activation gi_n + b_in + r·(W_hn·h + b_hn) in its third. h is the
// stride between the parts of gates, gh and gi.
TEXT ·gruGatesAVX2(SB), NOSPLIT, $0-56
	MOVQ gates+0(FP), DI
	MOVQ gh+8(FP), SI
	MOVQ gi+16(FP), DX
	MOVQ bin+24(FP), R10
	MOVQ bhn+32(FP), R11
	MOVQ h+40(FP), R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9
	MOVQ n+48(FP), CX
	SHRQ $3, CX
	VMOVUPS halfv<>(SB), Y14
gates:
	VMOVUPS (DI), Y0
	VFMADD213PS Y14, Y14, Y0
	VMOVUPS Y0, (DI)
	VMOVUPS (DI)(R8*1), Y1
	VFMADD213PS Y14, Y14, Y1
	VMOVUPS Y1, (DI)(R8*1)
	VMOVUPS (SI)(R8*2), Y2
	VADDPS (R11), Y2, Y2
	VMOVUPS Y2, (DI)(R9*1)
	VMOVUPS (DX)(R8*2), Y3
	VADDPS (R10), Y3, Y3
	VFMADD231PS Y2, Y0, Y3
	VMOVUPS Y3, (DI)(R8*2)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, R10
	ADDQ $32, R11
	DECQ CX
	JNZ gates
	VZEROUPPER
	RET

// func gruStateAVX2(h, hp, z, nn *float32, n int, a float32)
//
// gruCell's last loop over the first n values (n a positive multiple of
// 8): h = hp + a·(1−z)·(n−hp).
TEXT ·gruStateAVX2(SB), NOSPLIT, $0-44
	MOVQ h+0(FP), DI
	MOVQ hp+8(FP), SI
	MOVQ z+16(FP), DX
	MOVQ nn+24(FP), R10
	MOVQ n+32(FP), CX
	VBROADCASTSS a+40(FP), Y14
	VMOVUPS tanhv<>+64(SB), Y15
	XORQ AX, AX
state:
	VMOVUPS (SI)(AX*4), Y0
	VSUBPS (DX)(AX*4), Y15, Y1
	VMULPS Y14, Y1, Y1
	VMOVUPS (R10)(AX*4), Y2
	VSUBPS Y0, Y2, Y2
	VFMADD231PS Y2, Y1, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ $8, AX
	CMPQ AX, CX
	JLT state
	VZEROUPPER
	RET

// halfv is 0.5 in 8 lanes.
DATA halfv<>+0(SB)/4, $0x3f000000
DATA halfv<>+4(SB)/4, $0x3f000000
DATA halfv<>+8(SB)/4, $0x3f000000
DATA halfv<>+12(SB)/4, $0x3f000000
DATA halfv<>+16(SB)/4, $0x3f000000
DATA halfv<>+20(SB)/4, $0x3f000000
DATA halfv<>+24(SB)/4, $0x3f000000
DATA halfv<>+28(SB)/4, $0x3f000000
GLOBL halfv<>(SB), RODATA|NOPTR, $32

// func biasReLUAVX2(dst, x, bias *float32, rows, h, n int)
//
// For each of rows rows of h floats and each column o < n (a positive
// multiple of 8): dst = max(0, x + bias[o]), as VMAXPS with the zero as
// its first operand returns the second when they compare equal or
// either is NaN: -0 and NaN pass through, as in AddBiasReLU's loop.
// dst may be x.
TEXT ·biasReLUAVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ bias+16(FP), R10
	MOVQ rows+24(FP), DX
	MOVQ h+32(FP), R8
	MOVQ n+40(FP), CX
	SHLQ $2, R8
	VXORPS Y15, Y15, Y15
biasrow:
	XORQ AX, AX
biascol:
	VMOVUPS (SI)(AX*4), Y0
	VADDPS (R10)(AX*4), Y0, Y0
	VMAXPS Y0, Y15, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ $8, AX
	CMPQ AX, CX
	JLT biascol
	ADDQ R8, SI
	ADDQ R8, DI
	DECQ DX
	JNZ biasrow
	VZEROUPPER
	RET

// func reluBackAVX2(dst, grad, act *float32, n int)
//
// dst[i] = act[i] > 0 ? grad[i] : 0 for i < n, n a positive multiple of
// 8: an ordered greater-than mask (false for NaN) ANDed with grad. dst
// may be grad.
TEXT ·reluBackAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ act+16(FP), R10
	MOVQ n+24(FP), CX
	VXORPS Y15, Y15, Y15
	XORQ AX, AX
reluback:
	VMOVUPS (R10)(AX*4), Y0
	VCMPPS $0x1e, Y15, Y0, Y0 // act > 0, ordered, quiet
	VANDPS (SI)(AX*4), Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ $8, AX
	CMPQ AX, CX
	JLT reluback
	VZEROUPPER
	RET

// func colSumsAVX2(dst, src *float32, rows, h, n int)
//
// For each of rows rows of h floats of src and each column o < n (a
// positive multiple of 8): dst[o] += src, row after row, so every column
// sums in the order of ColSums' loop. dst is not cleared.
TEXT ·colSumsAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ rows+16(FP), DX
	MOVQ h+24(FP), R8
	MOVQ n+32(FP), CX
	SHLQ $2, R8
sumrow:
	XORQ AX, AX
sumcol:
	VMOVUPS (DI)(AX*4), Y0
	VADDPS (SI)(AX*4), Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ $8, AX
	CMPQ AX, CX
	JLT sumcol
	ADDQ R8, SI
	DECQ DX
	JNZ sumrow
	VZEROUPPER
	RET
