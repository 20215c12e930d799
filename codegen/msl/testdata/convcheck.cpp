// convcheck.cpp checks metal_shim.h's half and bfloat conversions for codegen/msl's tests:
//
//	convcheck IN OUT
//
// IN holds float32s; OUT receives, for each, the half bits and the bfloat bits of its conversion
// (2 × u16), then the float32 of every one of the 65536 half bit patterns and of every bfloat one.
#include "metal_shim.h"

int main(int argc, char** argv) {
	if (argc != 3)
		return 2;
	FILE* in = std::fopen(argv[1], "rb");
	FILE* out = std::fopen(argv[2], "wb");
	if (!in || !out)
		return 2;
	float f;
	while (std::fread(&f, 4, 1, in) == 1) {
		uint16_t h = half(f).bits, b = bfloat(f).bits;
		std::fwrite(&h, 2, 1, out);
		std::fwrite(&b, 2, 1, out);
	}
	for (uint32_t i = 0; i < 65536; i++) {
		half h;
		h.bits = uint16_t(i);
		float x = float(h);
		std::fwrite(&x, 4, 1, out);
	}
	for (uint32_t i = 0; i < 65536; i++) {
		bfloat b;
		b.bits = uint16_t(i);
		float x = float(b);
		std::fwrite(&x, 4, 1, out);
	}
	return std::fclose(out) == 0 ? 0 : 2;
}
