#pragma once
#include <lcms2.h>

// Little CMS's pixel-format macros are built from function-like macros Swift cannot import.
static const cmsUInt32Number IK_TYPE_RGBA_8 = TYPE_RGBA_8;
static const cmsUInt32Number IK_TYPE_RGB_8 = TYPE_RGB_8;
static const cmsUInt32Number IK_TYPE_GRAY_8 = TYPE_GRAY_8;
static const cmsUInt32Number IK_TYPE_CMYK_8 = TYPE_CMYK_8;
static const cmsUInt32Number IK_TYPE_CMYK_8_REV = TYPE_CMYK_8_REV;
static const cmsUInt32Number IK_TYPE_RGB_FLT = TYPE_RGB_FLT;
