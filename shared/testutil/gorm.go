package testutil

import "gorm.io/gorm"

func closeGorm(g *gorm.DB) {
	if sqlDB, err := g.DB(); err == nil {
		sqlDB.Close()
	}
}
