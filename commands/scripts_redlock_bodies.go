package commands

// Script bodies of node-redlock (npm "redlock"), byte for byte. Every v4
// release and v5 lock several resources in one script call; the texts
// differ only in whitespace and table.getn vs #KEYS, which changes the SHA1.

// node-redlock lockScript of redlock 4.0.0.
// SHA1 d01fb69e6ecc8bad3ca9bacba9f4f9e96862313f.
const redlockAcquireV40 = `
	-- Return 0 if an entry already exists.
	for i, key in ipairs(KEYS) do
		if redis.call("exists", key) == 1 then
			return 0
		end
	end

	-- Create an entry for each provided key.
	for i, key in ipairs(KEYS) do
		redis.call("set", key, ARGV[1], "PX", ARGV[2])
	end

	-- Return the number of entries added.
	return table.getn(KEYS)
`

// node-redlock unlockScript of redlock 4.0.0, 4.1.0.
// SHA1 517e7ed95f00c0c4a209c6a7afcc6ab797d30b85.
const redlockReleaseV40 = `
	local count = 0
	for i, key in ipairs(KEYS) do
	  -- Only remove entries for *this* lock value.
	  if redis.call("get", key) == ARGV[1] then
	    redis.pcall("del", key)
	    count = count + 1
	  end
	end

	-- Return the number of entries removed.
	return count
`

// node-redlock extendScript of redlock 4.0.0.
// SHA1 acaf90b4697bb48bb5f603e9e613a54df7536c70.
const redlockExtendV40 = `
	-- Return 0 if an entry exists with a *different* lock value.
	for i, key in ipairs(KEYS) do
	  if redis.call("get", key) ~= ARGV[1] then
	    return 0
	  end
	end

	-- Update the entry for each provided key.
	for i, key in ipairs(KEYS) do
	  redis.call("set", key, ARGV[1], "PX", ARGV[2])
	end

	-- Return the number of entries updated.
	return table.getn(KEYS)
`

// node-redlock lockScript of redlock 4.1.0, 4.2.0.
// SHA1 e5a322e2634ef59a516e8ea150cb085afafee684.
const redlockAcquireV41 = `
	-- Return 0 if an entry already exists.
	for i, key in ipairs(KEYS) do
		if redis.call("exists", key) == 1 then
			return 0
		end
	end

	-- Create an entry for each provided key.
	for i, key in ipairs(KEYS) do
		redis.call("set", key, ARGV[1], "PX", ARGV[2])
	end

	-- Return the number of entries added.
	return #KEYS
`

// node-redlock extendScript of redlock 4.1.0.
// SHA1 1d48b4c6fea2cdadc46b3346de5c2eaf121c7bb3.
const redlockExtendV41 = `
	-- Return 0 if an entry exists with a *different* lock value.
	for i, key in ipairs(KEYS) do
	  if redis.call("get", key) ~= ARGV[1] then
	    return 0
	  end
	end

	-- Update the entry for each provided key.
	for i, key in ipairs(KEYS) do
	  redis.call("set", key, ARGV[1], "PX", ARGV[2])
	end

	-- Return the number of entries updated.
	return #KEYS
`

// node-redlock unlockScript of redlock 4.2.0.
// SHA1 0f0f23b9048b36752b5be114f357ba083449f908.
const redlockReleaseV42 = `
	local count = 0
	for i, key in ipairs(KEYS) do
		-- Only remove entries for *this* lock value.
		if redis.call("get", key) == ARGV[1] then
			redis.pcall("del", key)
			count = count + 1
		end
	end

	-- Return the number of entries removed.
	return count
`

// node-redlock extendScript of redlock 4.2.0.
// SHA1 ce46f80993d5dac20dd066eb301a4e37994bdbed.
const redlockExtendV42 = `
	-- Return 0 if an entry exists with a *different* lock value.
	for i, key in ipairs(KEYS) do
		if redis.call("get", key) ~= ARGV[1] then
			return 0
		end
	end

	-- Update the entry for each provided key.
	for i, key in ipairs(KEYS) do
		redis.call("set", key, ARGV[1], "PX", ARGV[2])
	end

	-- Return the number of entries updated.
	return #KEYS
`

// node-redlock ACQUIRE_SCRIPT of redlock 5.0.0-beta.2 (the v5 line; npm's latest tag is 4.2.0).
// SHA1 96da70f7716f27d278a5218544df37fd8b0a5e4c.
const redlockAcquireV5 = `
  -- Return 0 if an entry already exists.
  for i, key in ipairs(KEYS) do
    if redis.call("exists", key) == 1 then
      return 0
    end
  end

  -- Create an entry for each provided key.
  for i, key in ipairs(KEYS) do
    redis.call("set", key, ARGV[1], "PX", ARGV[2])
  end

  -- Return the number of entries added.
  return #KEYS
`

// node-redlock EXTEND_SCRIPT of redlock 5.0.0-beta.2 (the v5 line; npm's latest tag is 4.2.0).
// SHA1 aed6f382e410db8ba7926d4e5e9aab410bf2a78a.
const redlockExtendV5 = `
  -- Return 0 if an entry exists with a *different* lock value.
  for i, key in ipairs(KEYS) do
    if redis.call("get", key) ~= ARGV[1] then
      return 0
    end
  end

  -- Update the entry for each provided key.
  for i, key in ipairs(KEYS) do
    redis.call("set", key, ARGV[1], "PX", ARGV[2])
  end

  -- Return the number of entries updated.
  return #KEYS
`

// node-redlock RELEASE_SCRIPT of redlock 5.0.0-beta.2 (the v5 line; npm's latest tag is 4.2.0).
// SHA1 e4612211c9f8f51c257e26e056b0a654b3187242.
const redlockReleaseV5 = `
  local count = 0
  for i, key in ipairs(KEYS) do
    -- Only remove entries for *this* lock value.
    if redis.call("get", key) == ARGV[1] then
      redis.pcall("del", key)
      count = count + 1
    end
  end

  -- Return the number of entries removed.
  return count
`
