import assert from 'node:assert/strict'
import { test } from 'node:test'
import { redactDatabaseUrl } from './database-url.ts'

test('a PostgreSQL URL is shown without its password, its user, host and database kept', () => {
  assert.equal(redactDatabaseUrl('postgres://app:s3cret@db.example:5432/shop'), 'postgres://app:[redacted]@db.example:5432/shop')
  assert.equal(redactDatabaseUrl('postgresql://app:p%40ss@db.example/shop?sslmode=require'), 'postgresql://app:[redacted]@db.example/shop?sslmode=require')
  assert.equal(redactDatabaseUrl('postgres://:only-a-password@db.example/shop'), 'postgres://:[redacted]@db.example/shop')
})

test('a password holding an unencoded @ or / is hidden whole', () => {
  for (const url of ['postgres://app:a@b@db.example/shop', 'postgres://app:a/b@db.example/shop']) {
    const shown = redactDatabaseUrl(url)
    assert.equal(shown, 'postgres://app:[redacted]@db.example/shop')
  }
})

test('a password parameter is hidden too', () => {
  assert.equal(
    redactDatabaseUrl('postgres://app@db.example/shop?password=s3cret&sslmode=require'),
    'postgres://app@db.example/shop?password=[redacted]&sslmode=require',
  )
  assert.equal(redactDatabaseUrl('postgres://db.example/shop?sslmode=require&PASSWORD=x'), 'postgres://db.example/shop?sslmode=require&PASSWORD=[redacted]')
})

test('URLs without a password are shown as they are', () => {
  for (const url of [
    'sqlite:data/shop-intake.db',
    'postgres://postgres@127.0.0.1:5432/test',
    'postgres:///shop?host=/var/run/postgresql',
    'postgres://app@[::1]:5432/shop',
  ]) {
    assert.equal(redactDatabaseUrl(url), url)
  }
})
